"""Counterfactual stand-ins: autograd Functions that replace an operation in a
re-run of the reference program, so we can see what a student who believes a
wrong rule would get. Their node class names map to the real op names
(`DetachBackward` → `detach`, `ReluBackward` → `relu`), so paths through them
are named exactly as the student would name them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F  # the conventional alias

RELU_SLOPES = ("identity", "dead", "flipped")


class Detach(torch.autograd.Function):
    """detach() as the identity: the value is copied and the gradient flows,
    which is what a student who ignores the cut computes."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad


class Relu(torch.autograd.Function):
    """ReLU whose backward uses the slopes a student may wrongly use:
    `identity` (slope 1 everywhere, also where the unit is off), `dead`
    (slope 0 everywhere, also where it is on), `flipped` (1 where off, 0 where on)."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor, slopes: str) -> torch.Tensor:
        ctx.save_for_backward(tensor)
        ctx.slopes = slopes
        return tensor.clamp(min=0)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        (tensor,) = ctx.saved_tensors
        on = tensor > 0
        factor = {
            "identity": torch.ones_like(grad),
            "dead": torch.zeros_like(grad),
            "flipped": (~on).to(grad.dtype),
        }[ctx.slopes]
        return grad * factor, None


DETACH_FUNCTIONS: tuple[Callable[..., Any], ...] = (torch.Tensor.detach, torch.detach)
RELU_FUNCTIONS: tuple[Callable[..., Any], ...] = (torch.relu, F.relu, torch.Tensor.relu)


def stand_in(
    func: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    detach_identity: bool,
    relu_slopes: str | None,
) -> Callable[[], Any] | None:
    """The replacement call for `func(*args, **kwargs)` in this counterfactual
    run, or None to run the real operation."""
    tensor = args[0] if args else kwargs.get("input")
    if not isinstance(tensor, torch.Tensor) or not tensor.requires_grad:
        return None
    if detach_identity and func in DETACH_FUNCTIONS:
        return lambda: Detach.apply(tensor)
    # An in-place relu changes its input's identity; leave that case real.
    if relu_slopes and func in RELU_FUNCTIONS and not kwargs.get("inplace", False):
        return lambda: Relu.apply(tensor, relu_slopes)
    return None
