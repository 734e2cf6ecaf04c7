"""Catalogued mistakes of the ops that normalise (layer norm, batch norm, the vector norm):
the statistics depend on every input too, so their terms belong in the
gradient; the norm's derivative is the unit vector, not the vector itself."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from chainrule.analysis.mutations.building import kept, mutation
from chainrule.analysis.mutations.input_symbols import wrapped
from chainrule.analysis.mutations.mutation_types import Mutation, NodeContext, RightDerivative

Found = tuple[list[RightDerivative], list[Mutation]]
LAYER_NORM = ("layer norm subtracts the mean μ and divides by σ, and μ and σ depend on every input as well: "
              "dx = (G - mean(G) - x̂·mean(G·x̂))/σ, the mean's term and the variance's term (with its minus "
              "sign) included, with G = grad·weight")
LAYER_NORM_WEIGHT = "layer norm's output is weight·x̂ + bias with x̂ = (x - μ)/σ: d/dweight = x̂ and d/dbias = 1"
NORM = ("d‖u‖/du = u/‖u‖: the norm's derivative is the unit vector along u, not u (that is the derivative of "
        "‖u‖²/2) nor 2u (the derivative of ‖u‖²)")


@dataclass
class _Normalised:
    """x̂ = (x - μ)·rstd over `dims`; the weight broadcast against x (None without one) and the
    dims its gradient sums over."""

    xh: torch.Tensor
    rstd: torch.Tensor
    dims: tuple[int, ...]
    weight: torch.Tensor | None
    parameter_dims: tuple[int, ...]

    def through(self, gxh: torch.Tensor, *, mean_term: bool = True, variance_term: float = -1.0) -> torch.Tensor:
        out = gxh - gxh.mean(self.dims, keepdim=True) if mean_term else gxh
        return (out + variance_term * self.xh * (gxh * self.xh).mean(self.dims, keepdim=True)) * self.rstd

    def per_parameter(self, tensor: torch.Tensor, shape: torch.Size) -> torch.Tensor:
        return (tensor.sum(self.parameter_dims) if self.parameter_dims else tensor).reshape(shape)


def _layer_norm(c: NodeContext) -> _Normalised | None:
    x, mean, rstd = c.node._saved_input, c.node._saved_result1, c.node._saved_result2
    if x is None or mean is None or rstd is None:
        return None
    dims = tuple(range(x.dim() - len(c.node._saved_normalized_shape), x.dim()))
    return _Normalised((x - mean) * rstd, rstd, dims, c.node._saved_weight, tuple(range(x.dim() - len(dims))))


def _batch_norm(c: NodeContext) -> _Normalised | None:
    x, mean, invstd = c.node._saved_input, c.node._saved_result1, c.node._saved_result2
    if x is None or mean is None or invstd is None or not bool(c.node._saved_training) or x.dim() < 2 \
            or mean.numel() != x.shape[1]:
        return None  # in eval mode the running statistics are constants: no statistics terms to forget
    shape = [1, x.shape[1]] + [1] * (x.dim() - 2)
    weight = c.node._saved_weight
    dims = (0, *range(2, x.dim()))
    return _Normalised((x - mean.reshape(shape)) * invstd.reshape(shape), invstd.reshape(shape), dims,
                       weight.reshape(shape) if weight is not None else None, dims)


def norm_mutations(c: NodeContext) -> Found:
    """layer norm (statistics over the trailing dims) and batch norm in training (over the batch)."""
    batch = type(c.node).__name__ == "NativeBatchNormBackward0"
    normalised = _batch_norm(c) if batch else _layer_norm(c)
    if normalised is None:
        return [], []
    name = "batch norm" if batch else "layer norm"
    lesson = LAYER_NORM.replace("layer norm", name)
    weight, g = normalised.weight, c.grad
    gxh = g * weight if weight is not None else g
    u, w = c.labels[0], c.labels[1] if weight is not None else "1"
    right = f"(G - mean(G) - x̂·mean(G·x̂))/σ with G = grad·{w}, x̂ = ({u} - μ)/σ"
    through = normalised.through
    mutations: list[Mutation | None] = []
    if c.right[0] is not None:
        mutations += [
            mutation(c, 0, "norm_statistics_constant", "G/σ (μ and σ taken as constants)", right, lesson,
                     through(gxh, mean_term=False, variance_term=0.0)),
            mutation(c, 0, "norm_variance_constant", "(G - mean(G))/σ (σ taken as a constant)", right, lesson,
                     through(gxh, variance_term=0.0)),
            mutation(c, 0, "norm_mean_constant", "(G - x̂·mean(G·x̂))/σ (μ taken as a constant)", right, lesson,
                     through(gxh, mean_term=False)),
            mutation(c, 0, "norm_variance_sign", "(G - mean(G) + x̂·mean(G·x̂))/σ", right, lesson,
                     through(gxh, variance_term=1.0)),
        ]
        if weight is not None:
            mutations.append(mutation(c, 0, "norm_weight_forgotten", f"the formula with G = grad ({w} left out)",
                                      right, lesson, through(g)))
    weight_lesson = LAYER_NORM_WEIGHT.replace("layer norm", name)
    if weight is not None and len(c.right) > 1 and c.right[1] is not None:
        centred = normalised.per_parameter(normalised.xh / normalised.rstd * g, c.right[1].shape)
        mutations.append(mutation(c, 1, "norm_not_divided", f"grad·({u} - μ) (the division by σ forgotten)",
                                  "grad·x̂ with x̂ = (x - μ)/σ", weight_lesson, centred))
    if weight is not None and len(c.right) > 2 and c.right[2] is not None:
        mutations.append(mutation(c, 2, "norm_bias_scaled", f"grad·{wrapped(w)} (scaled like the x̂ term)", "1",
                                  weight_lesson, normalised.per_parameter(g * weight, c.right[2].shape)))
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
