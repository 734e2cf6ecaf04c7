"""Catalogued mistakes of softmax, log_softmax, logsumexp and the losses (mean or
sum reduction, the normaliser, mse's 2), as full wrong vector-Jacobian products."""

from __future__ import annotations

import torch

from chainrule.analysis.mutations.building import kept as _kept
from chainrule.analysis.mutations.building import mutation as _mutation
from chainrule.analysis.mutations.model import Mutation, NodeContext, RightDerivative
from chainrule.op_names import op_name


def softmax_mutations(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    node_class, g = type(c.node).__name__, c.grad
    dim = int(c.node._saved_dim[0] if isinstance(c.node._saved_dim, tuple) else c.node._saved_dim)
    u = c.labels[0]
    if node_class == "SoftmaxBackward0":
        s = c.node._saved_result
        lesson = "softmax′ couples the entries: dsᵢ/dzⱼ = sᵢ(δᵢⱼ - sⱼ), so grad_z = s·(grad - Σ grad·s)"
        z = c.value_of(0)
        return [], _kept(_mutation(c, 0, "softmax_diagonal", "s·(1 - s) per entry", "s·(grad - Σ grad·s)", lesson,
                                   g * s * (1 - s)),
                         _mutation(c, 0, "softmax_itself", "s", "s·(grad - Σ grad·s)", lesson, g * s),
                         _mutation(c, 0, "softmax_exp", "exp(z) (no normaliser)", "s·(grad - Σ grad·s)", lesson,
                                   g * z.exp()) if z is not None else None)
    if node_class == "LogSoftmaxBackward0":
        z = c.value_of(0)
        lesson = "d log_softmax(z)/dz = 1 - softmax(z): the normaliser's gradient is softmax(z), not 1 or exp(z)"
        return [], _kept(
            _mutation(c, 0, "log_softmax_no_normaliser", "1 (the normaliser forgotten)", "1 - softmax(z)", lesson, g),
            _mutation(c, 0, "log_softmax_exp", "1 - exp(z)", "1 - softmax(z)", lesson,
                      g - z.exp() * g.sum(dim, keepdim=True)) if z is not None else None)
    z = c.node._saved_self
    keep = bool(c.node._saved_keepdim)
    expanded = g if keep else g.unsqueeze(dim) if g.dim() < z.dim() else g
    lesson = f"d logsumexp({u})/d{u} = softmax({u}) = exp({u}) / Σ exp({u}): the normaliser is part of the derivative"
    return [], _kept(
        _mutation(c, 0, "logsumexp_no_normaliser", f"exp({u})", f"softmax({u})", lesson, expanded * z.exp()),
        _mutation(c, 0, "logsumexp_mean", "1/N", f"softmax({u})", lesson,
                  expanded * torch.ones_like(z) / z.shape[dim]),
    )


def loss_mutations(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    reduction = int(c.node._saved_reduction)  # 0 none, 1 mean, 2 sum
    x = c.node._saved_self
    count = x.numel() if type(c.node).__name__ != "NllLossBackward0" else x.shape[0] if x.dim() > 1 else 1
    found: list[Mutation] = []
    name = op_label(c)
    lesson = (f"{name} with reduction='mean' divides by N = {count}: each element's gradient carries 1/N"
              if reduction == 1 else f"{name} with reduction='sum' adds the elements: there is no 1/N")
    for slot, real in enumerate(c.right):
        if real is None:
            continue
        if reduction == 1:
            found.extend(_kept(_mutation(c, slot, "loss_no_normaliser", "the sum's gradient (no 1/N)",
                                         f"1/{count} of it", lesson, real * count)))
        elif reduction == 2:
            found.extend(_kept(_mutation(c, slot, "loss_as_mean", f"1/{count} of the sum's gradient",
                                         "no 1/N", lesson, real / count)))
        if type(c.node).__name__ == "NllLossBackward0" and reduction == 1 and x.dim() > 1:
            found.extend(_kept(_mutation(c, slot, "loss_every_element", f"1/{x.numel()} (every entry)",
                                         f"1/{count} (the batch)", "cross-entropy's mean is over the batch "
                                         "(one loss per example), not over every logit", real * count / x.numel())))
        if type(c.node).__name__ == "MseLossBackward0":
            found.extend(_kept(_mutation(c, slot, "mse_no_two", "(x - y) without the 2", "2·(x - y)",
                                         "d(x - y)²/dx = 2·(x - y): the exponent comes down", real / 2)))
    return [], found


def op_label(c: NodeContext) -> str:
    return op_name(type(c.node).__name__)
