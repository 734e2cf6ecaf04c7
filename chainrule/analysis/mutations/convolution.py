"""Catalogued mistakes of a convolution (conv1d/conv2d, not transposed): the input's
gradient is the gradient convolved back with the kernel as it is (a cross-correlation's
transpose), the kernel's gradient correlates the input with grad, the bias sums grad over
every position and example."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.nn import grad as conv_grad

from chainrule.analysis.mutations.building import kept, mutation
from chainrule.analysis.mutations.mutation_types import Mutation, NodeContext, RightDerivative

Found = tuple[list[RightDerivative], list[Mutation]]
CONV = ("a convolution layer computes a cross-correlation (the kernel is not flipped): going back, each input "
        "entry gathers grad times the kernel entries it was multiplied by, and the kernel gathers grad times "
        "the input entries it saw, over every position")
BIAS = "a bias added at every position of every example gets the sum of grad over all of them"
GRADS: dict[int, tuple[Callable[..., torch.Tensor], Callable[..., torch.Tensor]]] = {
    1: (conv_grad.conv1d_input, conv_grad.conv1d_weight),
    2: (conv_grad.conv2d_input, conv_grad.conv2d_weight),
}


def _settings(node: Any) -> dict[str, Any]:
    return {"stride": list(node._saved_stride), "padding": list(node._saved_padding),
            "dilation": list(node._saved_dilation), "groups": int(node._saved_groups)}


def conv_mutations(c: NodeContext) -> Found:
    x, w = c.node._saved_input, c.node._saved_weight
    if x is None or w is None or bool(c.node._saved_transposed) or w.dim() - 2 not in GRADS:
        return [], []
    spatial = tuple(range(2, w.dim()))
    input_grad, weight_grad = GRADS[w.dim() - 2]
    settings, g = _settings(c.node), c.grad
    u, k = c.labels[0], c.labels[1] if len(c.labels) > 1 else "the kernel"
    found: list[Mutation | None] = []
    try:
        if c.right[0] is not None:
            found.append(mutation(c, 0, "conv_kernel_flipped", f"grad convolved with {k} flipped",
                                  f"grad convolved back with {k} as it is", CONV,
                                  input_grad(x.shape, w.flip(spatial), g, **settings)))
        if len(c.right) > 1 and c.right[1] is not None:
            found.append(mutation(c, 1, "conv_kernel_flipped", f"the correlation of {u} with grad, flipped",
                                  f"the correlation of {u} with grad", CONV,
                                  weight_grad(x, w.shape, g, **settings).flip(spatial)))
    except RuntimeError:
        return [], []
    if len(c.right) > 2 and c.right[2] is not None:
        positions = g[0, 0].numel()
        found += [mutation(c, 2, "conv_bias_one_position", "grad at one position only", "the sum of grad over every "
                           "position and example", BIAS, g.flatten(2)[:, :, 0].sum(0)),
                  mutation(c, 2, "conv_bias_averaged", f"the mean of grad over the {positions} positions",
                           "the sum of grad over every position and example", BIAS,
                           g.sum((0, *spatial)) / positions)]
    return [], kept(*found)
