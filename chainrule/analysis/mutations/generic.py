"""Mutations any op gets, catalogued or not, and the assembly of every
mutation of one node."""

from __future__ import annotations

import torch

from chainrule.analysis.mutations.elementwise import factor_mutations
from chainrule.analysis.mutations.input_symbols import wrapped
from chainrule.analysis.mutations.mutation_types import Mutation, NodeContext, RightDerivative
from chainrule.analysis.mutations.structural import structural_mutations
from chainrule.op_names import op_name
from chainrule.values import format_number

CHAIN = "the chain rule multiplies the local derivatives along the path: this edge's factor cannot be left out"
SIGN = "keep each local derivative's sign in the product along the path"
SCALE = "each edge contributes its local derivative exactly once"
HALF = "each edge contributes its whole local derivative: no factor ½ belongs to it"
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


# What the right local derivative of a shape op is, for the generic slips of ops with no factor to state.
RIGHT_TEXTS = {
    "slice": "grad at the sliced entries, 0 elsewhere", "select": "grad at the picked entry, 0 elsewhere",
    "index": "grad at the picked entries, 0 elsewhere", "t": "gradᵀ", "transpose": "gradᵀ", "permute":
    "grad permuted back", "view": "grad reshaped back", "reshape_alias": "grad reshaped back", "unsafe_view":
    "grad reshaped back", "expand": "the sum of grad over the broadcast rows", "cat": "its own slice of grad",
    "stack": "its own slice of grad", "squeeze": "grad reshaped back", "unsqueeze": "grad reshaped back",
}


def _scaled_texts(right_text: str | None) -> dict[str, str]:
    """How the generic slips read with the right factor written out (2·x, -(1/b), 2 for 2·1)."""
    if right_text is None:
        return {"generic_sign": "its local derivative with the sign flipped", "generic_transpose":
                "the transposed gradient", "generic_double": "twice its local derivative",
                "generic_half": "half its local derivative"}
    try:
        number = float(right_text)
    except ValueError:
        term = wrapped(right_text)
        return {"generic_sign": f"-{term}", "generic_transpose": f"{term}ᵀ", "generic_double": f"2·{term}",
                "generic_half": f"{term}/2"}
    return {"generic_sign": format_number(-number), "generic_transpose": f"{right_text}ᵀ",
            "generic_double": format_number(2 * number), "generic_half": format_number(number / 2)}


def generic_mutations(c: NodeContext, slot: int, stated: RightDerivative | None,
                      right_text: str | None = None) -> list[Mutation]:
    """Factor 1, sign, transposed, ×2, ÷2 on one edge; `right_text` names the right
    local derivative when no factor is stated (grad @ Wᵀ for a matrix product)."""
    real = c.right[slot]
    if real is None or len(c.grads) != 1 or not torch.isfinite(real).all():
        return []
    op = op_name(type(c.node).__name__)
    right_text = stated.formula if stated is not None else right_text or RIGHT_TEXTS.get(op)
    right = right_text or f"the local derivative of {op}"
    texts = _scaled_texts(right_text)
    # "1 as the local derivative" of a shape op whose gradient has another shape (stack, cat, a slice) would
    # sum the whole upstream gradient into each input: no factor was dropped, and no student reasons so.
    one = None if op in RIGHT_TEXTS and c.grad.shape != real.shape else _as_input(c.grad, real.shape)
    wrongs: list[tuple[str, str, str, torch.Tensor | None]] = [
        ("generic_one", "1", CHAIN, one),
        ("generic_sign", texts["generic_sign"], SIGN, -real),
        ("generic_transpose", texts["generic_transpose"], LAYOUT,
         real.mT if real.dim() == 2 and real.shape[0] == real.shape[1] else None),
        ("generic_double", texts["generic_double"], SCALE, 2 * real),
        ("generic_half", texts["generic_half"], HALF, real / 2),
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
        named = next((item.right for item in mutations if item.slots == (slot,)), None)
        generic.extend(generic_mutations(c, slot, stated, named))
    return rights, mutations + generic
