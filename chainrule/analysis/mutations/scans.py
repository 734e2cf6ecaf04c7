"""Catalogued mistakes of the running ops, cumsum and cumprod: entry k of the
result depends on every input entry up to k, so input i's gradient gathers
the gradients of entry i and of every later entry."""

from __future__ import annotations

import torch

from chainrule.analysis.mutations.building import kept, mutation
from chainrule.analysis.mutations.mutation_types import Mutation, NodeContext, RightDerivative

CUMSUM = ("cumsum's entry k adds the inputs up to k, so input i feeds entry i and every later one: its gradient "
          "is the sum of grad from entry i to the end (a cumsum taken backwards)")
CUMPROD = ("cumprod's entry k multiplies the inputs up to k, so input i feeds entry i and every later one: "
           "d pₖ/d xᵢ = pₖ/xᵢ for every k from i on, and the gradient adds them all")


def _from_the_end(tensor: torch.Tensor, dim: int) -> torch.Tensor:
    return tensor.flip(dim).cumsum(dim).flip(dim)


def cumsum_mutations(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    if c.right[0] is None:
        return [], []
    dim, g = int(c.node._saved_dim), c.grad
    right = "the sum of grad from entry i to the end"
    return [], kept(
        mutation(c, 0, "cumsum_forward", "the sum of grad from the first entry to entry i (a cumsum)", right,
                 CUMSUM, g.cumsum(dim)),
        mutation(c, 0, "cumsum_whole_sum", "the sum of every entry of grad, for each entry", right, CUMSUM,
                 g.sum(dim, keepdim=True).expand_as(g)),
    )


def cumprod_mutations(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    x, p = c.node._saved_self, c.node._saved_result
    if c.right[0] is None or x is None or p is None or x.dim() == 0:
        return [], []
    dim, g, u = int(c.node._saved_dim), c.grad, c.labels[0]
    right = f"the sum over k ≥ i of grad·pₖ/{u}ᵢ"
    size = x.shape[dim]
    before = torch.cat([torch.ones_like(p.narrow(dim, 0, 1)), p.narrow(dim, 0, size - 1)], dim)
    return [], kept(
        mutation(c, 0, "cumprod_own_entry", f"grad·pᵢ/{u}ᵢ (entry i only: the later products forgotten)", right,
                 CUMPROD, g * p / x),
        mutation(c, 0, "cumprod_not_divided", "the sum over k ≥ i of grad·pₖ (not divided by the input)", right,
                 CUMPROD, _from_the_end(g * p, dim)),
        mutation(c, 0, "cumprod_prefix", f"the sum over k ≥ i of grad times the product before {u}ᵢ", right,
                 CUMPROD, _from_the_end(g, dim) * before),
    )
