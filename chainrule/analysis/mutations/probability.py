"""Catalogued mistakes of softmax, log_softmax, logsumexp and the losses (mean or
sum reduction, the normaliser, mse's 2), as full wrong vector-Jacobian products."""

from __future__ import annotations

import torch

from chainrule.analysis.mutations.building import kept as _kept
from chainrule.analysis.mutations.building import mutation as _mutation
from chainrule.analysis.mutations.input_symbols import wrapped
from chainrule.analysis.mutations.mutation_types import Mutation, NodeContext, RightDerivative
from chainrule.op_names import op_name


def softmax_mutations(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    node_class, g = type(c.node).__name__, c.grad
    dim = int(c.node._saved_dim[0] if isinstance(c.node._saved_dim, tuple) else c.node._saved_dim)
    u = c.labels[0]
    if node_class == "SoftmaxBackward0":
        s = c.node._saved_result
        right = f"s·(grad - Σ grad·s) with s = softmax({u})"
        lesson = (f"softmax couples the entries: dsᵢ/d{wrapped(u)}ⱼ = sᵢ(δᵢⱼ - sⱼ), so the gradient of {u} is "
                  "s·(grad - Σ grad·s), not s·(1 - s) entry by entry")
        z = c.value_of(0)
        return [], _kept(_mutation(c, 0, "softmax_diagonal", "s·(1 - s) per entry", right, lesson, g * s * (1 - s)),
                         _mutation(c, 0, "softmax_itself", "s", right, lesson, g * s),
                         _mutation(c, 0, "softmax_exp", f"exp({u}) (no normaliser)", right, lesson,
                                   g * z.exp()) if z is not None else None,
                         # -log softmax(z)[t] differentiated as softmax(z): the -1 at the target class left out
                         _mutation(c, 0, "softmax_normaliser_only", "-s·Σ grad·s alone (grad's own term s·grad "
                                   "left out: the -1 at the target of a loss)", right, lesson,
                                   -s * (g * s).sum(dim, keepdim=True)))
    if node_class == "LogSoftmaxBackward0":
        z = c.value_of(0)
        right = f"1 - softmax({u})"
        lesson = (f"d log_softmax({u})/d{wrapped(u)} = 1 - softmax({u}): the normaliser's gradient is "
                  f"softmax({u}), not 1 or exp({u})")
        s = c.node._saved_result.exp()
        return [], _kept(
            _mutation(c, 0, "log_softmax_no_normaliser", "1 (the normaliser forgotten)", right, lesson, g),
            _mutation(c, 0, "log_softmax_exp", f"1 - exp({u})", right, lesson,
                      g - z.exp() * g.sum(dim, keepdim=True)) if z is not None else None,
            _mutation(c, 0, "log_softmax_normaliser_only", f"-softmax({u}) alone (the 1 forgotten: grad's own "
                      "term, the -1 at the target of a loss)", right, lesson, -s * g.sum(dim, keepdim=True)))
    z = c.node._saved_self
    keep = bool(c.node._saved_keepdim)
    expanded = g if keep else g.unsqueeze(dim) if g.dim() < z.dim() else g
    lesson = (f"d logsumexp({u})/d{wrapped(u)} = softmax({u}) = exp({u}) / Σ exp({u}): the normaliser is part "
              "of the derivative")
    return [], _kept(
        _mutation(c, 0, "logsumexp_no_normaliser", f"exp({u})", f"softmax({u})", lesson, expanded * z.exp()),
        _mutation(c, 0, "logsumexp_mean", f"1/{z.shape[dim]}", f"softmax({u})", lesson,
                  expanded * torch.ones_like(z) / z.shape[dim]),
    )


def _per_element(c: NodeContext) -> str:
    """Each element's gradient of the loss before any 1/N, in the student's names."""
    p = c.labels[0]
    t = c.labels[1] if len(c.labels) > 1 else "the target"
    return {"MseLossBackward0": f"2·({p} - {t})", "L1LossBackward0": f"sign({p} - {t})",
            "BinaryCrossEntropyBackward0": f"({p} - {t})/({p}·(1 - {p}))",
            "NllLossBackward0": "-1 at each example's target entry"}.get(type(c.node).__name__, "its gradient")


def _over(text: str, count: int) -> str:
    return text.replace("-1 at", f"-1/{count} at") if text.startswith("-1 at") else f"{text}/{count}"


def loss_mutations(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    reduction = int(c.node._saved_reduction)  # 0 none, 1 mean, 2 sum
    x = c.node._saved_self
    count = x.numel() if type(c.node).__name__ != "NllLossBackward0" else x.shape[0] if x.dim() > 1 else 1
    found: list[Mutation] = []
    name = op_label(c)
    lesson = (f"{name} with reduction='mean' divides by N = {count}: each element's gradient carries 1/N"
              if reduction == 1 else f"{name} with reduction='sum' adds the elements: there is no 1/N")
    summed = _per_element(c)
    right = _over(summed, count) if reduction == 1 else summed
    for slot, real in enumerate(c.right):
        if real is None:
            continue
        if reduction == 1:
            found.extend(_kept(_mutation(c, slot, "loss_no_normaliser", summed, right, lesson, real * count)))
        elif reduction == 2:
            found.extend(_kept(_mutation(c, slot, "loss_as_mean", _over(summed, count), right, lesson,
                                         real / count)))
        if type(c.node).__name__ == "NllLossBackward0" and reduction == 1 and x.dim() > 1:
            found.extend(_kept(_mutation(c, slot, "loss_every_element", _over(summed, x.numel()), right,
                                         "cross-entropy's mean is over the batch (one loss per example), not over "
                                         "every logit", real * count / x.numel())))
        if type(c.node).__name__ == "MseLossBackward0":
            p, t = c.labels[0], c.labels[1] if len(c.labels) > 1 else "the target"
            half = f"({p} - {t})"
            found.extend(_kept(_mutation(c, slot, "mse_no_two", _over(half, count) if reduction == 1 else half,
                                         right, f"d{half}²/d{wrapped(p)} = 2·{half}: the exponent comes down",
                                         real / 2)))
    return [], found


def op_label(c: NodeContext) -> str:
    return op_name(type(c.node).__name__)


def logits_loss_mutations(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    """binary_cross_entropy_with_logits: d/dz = σ(z) - y per element (over N for the mean)."""
    z, y = c.node._saved_self, c.node._saved_target
    if c.right[0] is None or z is None or y is None or c.node._saved_weight is not None \
            or c.node._saved_pos_weight is not None:
        return [], []
    reduction = int(c.node._saved_reduction)
    count = z.numel() if reduction == 1 else 1
    p, t = c.labels[0], c.labels[1] if len(c.labels) > 1 else "the target"
    over = f"/{count}" if count > 1 else ""
    right = f"(σ({p}) - {t}){over}"
    lesson = ("binary cross-entropy on logits: d/dz [-y·ln σ(z) - (1 - y)·ln(1 - σ(z))] = σ(z) - y, the sigmoid's "
              "own derivative already cancelled" + (f", and the mean divides by N = {count}" if count > 1 else ""))
    g, s = c.grad, torch.sigmoid(z)
    return [], _kept(
        _mutation(c, 0, "logits_no_sigmoid", f"({p} - {t}){over} (the sigmoid left out)", right, lesson,
                  g * (z - y) / count),
        _mutation(c, 0, "logits_sigmoid_again", f"(σ({p}) - {t})·σ′({p}){over} (σ′ applied again)", right, lesson,
                  g * (s - y) * s * (1 - s) / count),
        _mutation(c, 0, "loss_no_normaliser", f"σ({p}) - {t}", right, lesson, g * (s - y)) if count > 1 else None,
    )
