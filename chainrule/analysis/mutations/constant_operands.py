"""Wrong local derivatives for an operand autograd does not track: a 0/1 mask
read backwards (the complement used), a scale that is a square root used
without its root (attention's 1/√d taken as 1/d)."""

from __future__ import annotations

from fractions import Fraction

import torch

from chainrule.analysis.mutations.input_symbols import wrapped
from chainrule.analysis.mutations.mutation_types import NodeContext
from chainrule.values import format_number

Wrong = tuple[str, str, torch.Tensor, str]  # (rule id, used formula, used factor, lesson)
MASK = ("a 0/1 mask multiplies: the gradient passes where the mask is 1 and is blocked where it is 0, the very "
        "entries the forward pass kept")
SCALE_ROOT = ("scaling by a constant scales the gradient by that very constant (its inverse for a division): "
              "a scale of 1/√d stays 1/√d going back, the square root included")


def constant_operand(c: NodeContext, slot: int, saved: torch.Tensor | None) -> torch.Tensor | None:
    """The operand in `slot` when autograd does not track it (a mask, a scale), else None."""
    untracked = len(c.node.next_functions) <= slot or c.node.next_functions[slot][0] is None
    return saved if untracked and isinstance(saved, torch.Tensor) else None


def constant_wrongs(c: NodeContext, slot: int, constant: torch.Tensor | None, *, divides: bool) -> list[Wrong]:
    """A 0/1 mask read backwards; a scale that is a square root used without its root (attention's
    1/√d taken as 1/d)."""
    if constant is None:
        return []
    label = c.labels[slot]
    values = set(constant.detach().reshape(-1).tolist()) if constant.numel() <= 10_000 else set()
    if values == {0.0, 1.0} and not divides:
        return [("mul_mask_inverted", f"1 - {wrapped(label)}", 1 - constant, MASK)]
    if constant.numel() != 1 or not _a_root(float(constant)):
        return []
    k = constant.detach()
    square = format_number(float(k) ** 2)
    if divides:
        return [("scale_root_dropped", f"1/{square} (the square root of {square} left out)", 1 / k**2, SCALE_ROOT)]
    return [("scale_root_dropped", f"{square} (the square root of {square} left out)", k**2, SCALE_ROOT)]


def _a_root(value: float) -> bool:
    """√3 or 1/√8: not a simple fraction itself, but its square is one."""
    def simple(number: float) -> bool:
        return abs(float(Fraction(number).limit_denominator(12)) - number) <= 1e-6 * max(1.0, abs(number))

    return value > 0 and not simple(value) and simple(value * value)
