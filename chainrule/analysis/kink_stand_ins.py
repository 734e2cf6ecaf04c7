"""Counterfactual stand-ins for the ops with a kink (relu, leaky_relu, clamp,
abs, maximum/minimum, where, masked_fill): a student who ignores the kink either in the
backward pass only (slope 1 everywhere, the forward values right) or in the
forward pass as well (the op taken as the identity, so every value after it
changes too, e.g. L = Σ relu(h)²)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F  # the conventional alias

from chainrule.op_names import KINK_OPS

KINK_MODES = ("backward", "both")
UNARY_KINKS: tuple[Callable[..., Any], ...] = (
    torch.relu, F.relu, torch.Tensor.relu, F.leaky_relu, torch.clamp, torch.Tensor.clamp, torch.clip,
    torch.Tensor.clip, torch.clamp_min, torch.Tensor.clamp_min, torch.clamp_max, torch.Tensor.clamp_max,
    torch.abs, torch.Tensor.abs, torch.Tensor.__abs__, F.relu6, F.hardtanh, torch.masked_fill, torch.Tensor.masked_fill,
)
BINARY_KINKS: tuple[Callable[..., Any], ...] = (torch.maximum, torch.Tensor.maximum, torch.minimum,
                                                 torch.Tensor.minimum, torch.max, torch.Tensor.max, torch.min,
                                                 torch.Tensor.min)
KINK_OP_NAMES = KINK_OPS


class KinkIgnored(torch.autograd.Function):
    """Returns `value` and passes the arriving gradient unchanged to every input."""

    @staticmethod
    def forward(ctx: Any, value: torch.Tensor, *inputs: Any) -> torch.Tensor:
        ctx.shapes = [item.shape if isinstance(item, torch.Tensor) else None for item in inputs]
        return value.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        return (None, *[_summed(grad, shape) for shape in ctx.shapes])


def _summed(grad: torch.Tensor, shape: torch.Size | None) -> torch.Tensor | None:
    if shape is None:
        return None
    return grad.sum_to_size(shape) if grad.shape != shape else grad


def kink_stand_in(
    func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], mode: str
) -> Callable[[], Any] | None:
    if kwargs.get("inplace") or kwargs.get("out") is not None:
        return None
    tensors = [item for item in args if isinstance(item, torch.Tensor)]
    if not tensors or not any(item.requires_grad for item in tensors):
        return None
    if func in UNARY_KINKS:
        first = tensors[0]
        if mode == "both":
            return lambda: KinkIgnored.apply(first.detach(), first)
        return lambda: KinkIgnored.apply(func(*args, **kwargs).detach(), first)
    if func in BINARY_KINKS and len(tensors) == 2 and not kwargs and len(args) == 2:
        return lambda: KinkIgnored.apply(func(*args).detach(), *tensors)
    if func is torch.where and len(args) == 3:
        chosen = [item for item in args[1:] if isinstance(item, torch.Tensor)]
        first = args[1]
        if mode == "both" and isinstance(first, torch.Tensor):  # the first branch taken everywhere
            shape = torch.broadcast_shapes(*(item.shape for item in args if isinstance(item, torch.Tensor)))
            return lambda: KinkIgnored.apply(first.detach().expand(shape).clone(), first)
        return lambda: KinkIgnored.apply(func(*args).detach(), *chosen) if chosen else func(*args)
    return None
