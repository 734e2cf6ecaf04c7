"""Catalogued mistakes of the ops that normalise (layer norm, the vector norm):
the statistics depend on every input too, so their terms belong in the
gradient; the norm's derivative is the unit vector, not the vector itself."""

from __future__ import annotations

import torch

from chainrule.analysis.mutations.building import kept, mutation
from chainrule.analysis.mutations.labels import wrapped
from chainrule.analysis.mutations.model import Mutation, NodeContext, RightDerivative

Found = tuple[list[RightDerivative], list[Mutation]]
LAYER_NORM = ("layer norm subtracts the mean μ and divides by σ, and μ and σ depend on every input as well: "
              "dx = (G - mean(G) - x̂·mean(G·x̂))/σ, the mean's term and the variance's term (with its minus "
              "sign) included, with G = grad·weight")
LAYER_NORM_WEIGHT = "layer norm's output is weight·x̂ + bias with x̂ = (x - μ)/σ: d/dweight = x̂ and d/dbias = 1"
NORM = ("d‖u‖/du = u/‖u‖: the norm's derivative is the unit vector along u, not u (that is the derivative of "
        "‖u‖²/2) nor 2u (the derivative of ‖u‖²)")


def _normalised_inputs(c: NodeContext) -> tuple[torch.Tensor, torch.Tensor, tuple[int, ...]] | None:
    x, mean, rstd = c.node._saved_input, c.node._saved_result1, c.node._saved_result2
    if x is None or mean is None or rstd is None:
        return None
    dims = tuple(range(x.dim() - len(c.node._saved_normalized_shape), x.dim()))
    return (x - mean) * rstd, rstd, dims


def _through_norm(gxh: torch.Tensor, xh: torch.Tensor, rstd: torch.Tensor, dims: tuple[int, ...], *,
                  mean_term: bool = True, variance_term: float = -1.0) -> torch.Tensor:
    out = gxh - gxh.mean(dims, keepdim=True) if mean_term else gxh
    return (out + variance_term * xh * (gxh * xh).mean(dims, keepdim=True)) * rstd


def layer_norm_mutations(c: NodeContext) -> Found:
    found = _normalised_inputs(c)
    if found is None:
        return [], []
    xh, rstd, dims = found
    weight, g = c.node._saved_weight, c.grad
    scale = weight if weight is not None else torch.ones(())
    gxh = g * scale
    u, w = c.labels[0], c.labels[1] if weight is not None else "1"
    right = f"(G - mean(G) - x̂·mean(G·x̂))/σ with G = grad·{w}, x̂ = ({u} - μ)/σ"
    mutations: list[Mutation | None] = []
    if c.right[0] is not None:
        mutations += [
            mutation(c, 0, "layer_norm_statistics_constant", "G/σ (μ and σ taken as constants)", right, LAYER_NORM,
                     _through_norm(gxh, xh, rstd, dims, mean_term=False, variance_term=0.0)),
            mutation(c, 0, "layer_norm_variance_constant", "(G - mean(G))/σ (σ taken as a constant)", right,
                     LAYER_NORM, _through_norm(gxh, xh, rstd, dims, variance_term=0.0)),
            mutation(c, 0, "layer_norm_mean_constant", "(G - x̂·mean(G·x̂))/σ (μ taken as a constant)", right,
                     LAYER_NORM, _through_norm(gxh, xh, rstd, dims, mean_term=False)),
            mutation(c, 0, "layer_norm_variance_sign", "(G - mean(G) + x̂·mean(G·x̂))/σ", right, LAYER_NORM,
                     _through_norm(gxh, xh, rstd, dims, variance_term=1.0)),
        ]
        if weight is not None:
            mutations.append(mutation(c, 0, "layer_norm_weight_forgotten", f"the formula with G = grad ({w} left out)",
                                      right, LAYER_NORM, _through_norm(g, xh, rstd, dims)))
    if weight is not None and len(c.right) > 1 and c.right[1] is not None:
        centred = (xh / rstd * g).sum_to_size(c.right[1].shape)
        mutations.append(mutation(c, 1, "layer_norm_not_divided", f"grad·({u} - μ) (the division by σ forgotten)",
                                  "grad·x̂ with x̂ = (x - μ)/σ", LAYER_NORM_WEIGHT, centred))
    if weight is not None and len(c.right) > 2 and c.right[2] is not None:
        mutations.append(mutation(c, 2, "layer_norm_bias_scaled", f"grad·{wrapped(w)} (scaled like the x̂ term)", "1",
                                  LAYER_NORM_WEIGHT, (g * scale).sum_to_size(c.right[2].shape)))
    return [], kept(*mutations)


def vector_norm_mutations(c: NodeContext) -> Found:
    x, result = c.node._saved_self, c.node._saved_result
    if c.right[0] is None or x is None or result is None or float(c.node._saved_ord) != 2.0:
        return [], []
    dims, g = c.node._saved_dim, c.grad
    if dims is not None and not bool(c.node._saved_keepdim):
        for dim in sorted(int(d) % x.dim() for d in dims):
            g = g.unsqueeze(dim)
    u = c.labels[0]
    right = f"{wrapped(u)}/‖{u}‖"
    rights = [RightDerivative(0, right, x / result)] if dims is None else []
    return rights, kept(
        mutation(c, 0, "norm_not_divided", u, right, NORM, g * x),
        mutation(c, 0, "norm_squared", f"2·{wrapped(u)}", right, NORM, 2 * g * x),
    )
