"""Catalogued mistakes of the losses that are quadratic near zero and linear
further out (huber_loss, smooth_l1_loss): the slope of each element is the
residual inside the band and a constant with the residual's sign outside."""

from __future__ import annotations

import torch

from chainrule.analysis.mutations.building import kept, mutation
from chainrule.analysis.mutations.mutation_types import Mutation, NodeContext, RightDerivative
from chainrule.values import format_number

Found = tuple[list[RightDerivative], list[Mutation]]


def _band(c: NodeContext) -> tuple[float, float, str]:
    """(half-width of the quadratic band, the slope's scale inside it, the loss's name)."""
    if type(c.node).__name__ == "HuberLossBackward0":
        return float(c.node._saved_delta), 1.0, "huber_loss"
    beta = float(c.node._saved_beta)
    return beta, 1.0 / beta if beta > 0 else 1.0, "smooth_l1_loss"


def robust_loss_mutations(c: NodeContext) -> Found:
    x, target = c.node._saved_self, c.node._saved_target
    if x is None or target is None:
        return [], []
    width, inside, name = _band(c)
    r = x - target
    reduction = int(c.node._saved_reduction)  # 0 none, 1 mean, 2 sum
    count = r.numel() if reduction == 1 else 1
    g = c.grad
    d = format_number(width)
    outside = width * inside  # the slope's size past the band (δ for huber, 1 for smooth_l1)
    p, t = c.labels[0], c.labels[1] if len(c.labels) > 1 else "the target"
    residual = f"({p} - {t})"
    over = f", divided by N = {count}" if count > 1 else ""
    scaled = f"/{d}" if inside != 1 else ""
    coefficient = "" if outside == 1 else f"{format_number(outside)}·"
    right = f"{residual}{scaled} inside [-{d}, {d}], {coefficient}sign{residual} outside{over}"
    lesson = (f"{name} is quadratic for residuals inside [-{d}, {d}] and linear outside: its slope is the "
              f"residual inside and ±{format_number(outside)} (the residual's sign) outside"
              + (f", and the mean divides by N = {count}" if count > 1 else ""))
    slopes = {
        "robust_quadratic": ("the residual everywhere (the linear part ignored)", r * inside),
        "robust_linear": (f"{coefficient}sign{residual} everywhere (the quadratic part ignored)",
                          outside * torch.sign(r)),
        "robust_unsigned": (f"+{format_number(outside)} outside the band, whatever the residual's sign",
                            torch.where(r.abs() <= width, r * inside, torch.full_like(r, outside))),
        "robust_mse": (f"2·{residual}, the squared error's slope", 2 * r),
    }
    right_slope = torch.clamp(r * inside, -outside, outside)
    found: list[Mutation | None] = []
    for slot, sign in ((0, 1.0), (1, -1.0)):
        if slot >= len(c.right) or c.right[slot] is None:
            continue
        for rule, (used, slope) in slopes.items():
            found.append(mutation(c, slot, rule, used + over, right, lesson, sign * g * slope / count))
        if count > 1:
            found.append(mutation(c, slot, "loss_no_normaliser", "the slope without the 1/N", right, lesson,
                                  sign * g * right_slope))
    return [], kept(*found)
