"""Helpers for writing one wrong vector-Jacobian product."""

from __future__ import annotations

import torch

from chainrule.analysis.mutations.mutation_types import Mutation, NodeContext


def mutation(c: NodeContext, slot: int, rule: str, used: str, right: str, lesson: str,
             wrong: torch.Tensor) -> Mutation | None:
    """The mutation passing `wrong` to input `slot`, unless it is no typable answer or no mistake."""
    real = c.right[slot]
    if real is None or wrong.numel() != real.numel() or not torch.isfinite(wrong).all():
        return None
    if torch.allclose(wrong.reshape(real.shape).double(), real.double()):
        return None
    return Mutation((slot,), rule, used, right, lesson, c.replaced(slot, wrong), structural=True)


def kept(*items: Mutation | None) -> list[Mutation]:
    return [item for item in items if item is not None]
