"""Catalogued mistakes of the reductions that are no plain sum: var and std (the
centring, the 2, the N - 1 of the unbiased estimate, the root's chain) and prod
(each entry's derivative is the product of the others)."""

from __future__ import annotations

import torch

from chainrule.analysis.mutations.building import kept, mutation
from chainrule.analysis.mutations.mutation_types import Mutation, NodeContext, RightDerivative

Found = tuple[list[RightDerivative], list[Mutation]]
VAR = ("var = Σ(x - μ)²/(N - c) (c = 1 for the unbiased estimate, 0 for the biased one): dvar/dxᵢ = 2(xᵢ - μ)/(N - c);"
       " μ's own dependence cancels out")
STD = "std = √var: dstd/dxᵢ = (xᵢ - μ)/((N - c)·std), the root's 1/(2·std) times var's 2(xᵢ - μ)/(N - c)"
PROD = "d(x₁·x₂·…·xₙ)/dxᵢ is the product of all the other entries, the whole product divided by xᵢ"


def _expanded(c: NodeContext, x: torch.Tensor) -> tuple[torch.Tensor, tuple[int, ...]]:
    """The arriving gradient with the reduced dims kept, and those dims."""
    dims = getattr(c.node, "_saved_dim", None)
    reduced = tuple(range(x.dim())) if dims is None else tuple(sorted(int(d) % max(x.dim(), 1) for d in dims))
    g = c.grad
    if not bool(getattr(c.node, "_saved_keepdim", False)) and g.dim() < x.dim():
        for dim in reduced:
            g = g.unsqueeze(dim)
    return g, reduced


def _spread(x: torch.Tensor, reduced: tuple[int, ...]) -> tuple[torch.Tensor, int]:
    count = 1
    for dim in reduced:
        count *= x.shape[dim]
    return x - x.mean(reduced, keepdim=True), count


def var_mutations(c: NodeContext) -> Found:
    x = c.node._saved_self
    correction = float(c.node._saved_correction if c.node._saved_correction is not None else 1)
    if c.right[0] is None or x is None:
        return [], []
    g, reduced = _expanded(c, x)
    centred, count = _spread(x, reduced)
    u = c.labels[0]
    if count - correction <= 0:
        return [], []
    right = f"2·({u} - μ)/{count - correction:g}"
    found = [mutation(c, 0, "var_no_two", f"({u} - μ)/{count - correction:g}", right, VAR,
                      g * centred / (count - correction)),
             mutation(c, 0, "var_uncentred", f"2·{u}/{count - correction:g} (μ left out)", right, VAR,
                      g * 2 * x / (count - correction))]
    if correction in (0.0, 1.0) and count - (1 - correction) > 0:
        other = count - (1 - correction)
        found.append(mutation(c, 0, "var_correction", f"2·({u} - μ)/{other:g}", right, VAR, g * 2 * centred / other))
    return [], kept(*found)


def std_mutations(c: NodeContext) -> Found:
    x, result = c.node._saved_self, c.node._saved_result
    correction = float(c.node._saved_correction if c.node._saved_correction is not None else 1)
    if c.right[0] is None or x is None or result is None:
        return [], []
    g, reduced = _expanded(c, x)
    std = result if result.dim() == g.dim() else result.reshape(g.shape)
    centred, count = _spread(x, reduced)
    u, n = c.labels[0], count - correction
    if n <= 0:
        return [], []
    right = f"({u} - μ)/({n:g}·std)"
    found = [mutation(c, 0, "std_as_var", f"2·({u} - μ)/{n:g} (the root's chain forgotten)", right, STD,
                      g * 2 * centred / n),
             mutation(c, 0, "std_uncentred", f"{u}/({n:g}·std) (μ left out)", right, STD, g * x / (n * std))]
    if correction in (0.0, 1.0) and count - (1 - correction) > 0:
        other = count - (1 - correction)
        found.append(mutation(c, 0, "var_correction", f"({u} - μ)/({other:g}·std)", right, STD,
                              g * centred / (other * std)))
    return [], kept(*found)


def prod_mutations(c: NodeContext) -> Found:
    x, result = c.node._saved_self, c.node._saved_result
    if c.right[0] is None or x is None or result is None:
        return [], []
    g, reduced = _expanded(c, x)
    product = result if result.dim() == g.dim() else result.reshape(g.shape)
    u = c.labels[0]
    right = f"the product of the other entries of {u}"
    return [], kept(
        mutation(c, 0, "prod_not_divided", f"the whole product (the entry of {u} itself kept)", right, PROD,
                 g * product.expand(x.shape)),
        mutation(c, 0, "prod_own_entry", f"the entry of {u} itself", right, PROD, g * x),
    )
