"""Mutations any op gets, catalogued or not, and the assembly of every
mutation of one node."""

from __future__ import annotations

import torch

from chainrule.analysis.mutations.elementwise import factor_mutations
from chainrule.analysis.mutations.model import Mutation, NodeContext, RightDerivative
from chainrule.analysis.mutations.structural import structural_mutations

CHAIN = "the chain rule multiplies the local derivatives along the path: this edge's factor cannot be left out"
SIGN = "keep each local derivative's sign in the product along the path"
SCALE = "each edge contributes its local derivative exactly once"
LAYOUT = "a gradient has the shape and layout of its tensor: entry (i, j) belongs to entry (i, j)"


def _as_input(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor | None:
    if grad.shape == shape:
        return grad
    if grad.numel() == 1:
        return grad.reshape(()) * torch.ones(shape, dtype=grad.dtype)
    try:
        return grad.sum_to_size(shape)
    except RuntimeError:
        return grad.reshape(shape) if grad.numel() == torch.Size(shape).numel() else None


def generic_mutations(c: NodeContext, slot: int, stated: RightDerivative | None) -> list[Mutation]:
    real = c.right[slot]
    if real is None or len(c.grads) != 1 or not torch.isfinite(real).all():
        return []
    right_text = stated.formula if stated is not None else None
    right = right_text or "its local derivative"
    term = f"({right})" if any(sign in right for sign in " +-·/") else right
    wrongs: list[tuple[str, str, str, torch.Tensor | None]] = [
        ("generic_one", "1", CHAIN, _as_input(c.grad, real.shape)),
        ("generic_sign", f"-{term}" if right_text else "its local derivative with the sign flipped", SIGN, -real),
        ("generic_transpose", f"{term}ᵀ" if right_text else "the transposed gradient", LAYOUT,
         real.mT if real.dim() == 2 and real.shape[0] == real.shape[1] else None),
        ("generic_double", f"2·{term}" if right_text else "twice its local derivative", SCALE, 2 * real),
        ("generic_half", f"{term}/2" if right_text else "half its local derivative", SCALE, real / 2),
    ]
    factor = stated.value if stated is not None else None
    used_factors = {"generic_one": torch.ones(()), "generic_sign": -factor, "generic_double": 2 * factor,
                    "generic_half": factor / 2} if factor is not None else {}
    found = []
    for rule, used, lesson, wrong in wrongs:
        if wrong is None or torch.allclose(wrong.double(), real.double()):
            continue
        found.append(Mutation((slot,), rule, used, right, lesson, c.replaced(slot, wrong), generic=True,
                              used_value=used_factors.get(rule), right_value=factor))
    return found


def node_mutations(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    """The right local derivative of each input edge where it is a factor, and
    every wrong one: catalogued first, then generic."""
    rights, mutations = structural_mutations(c)
    generic: list[Mutation] = []
    for slot, (child, _) in enumerate(c.node.next_functions):
        if child is None or slot >= len(c.right) or c.right[slot] is None:
            continue
        right, catalogued = factor_mutations(c, slot)
        if right is not None:
            rights.append(right)
        mutations.extend(catalogued)
        stated = next((item for item in rights if item.slot == slot), None)
        generic.extend(generic_mutations(c, slot, stated))
    return rights, mutations + generic
