"""A program's own torch.autograd.Function checked where it was used (torch, in the sandbox that
runs the program): its backward, given a grad_output, against the vector-Jacobian product of its own
forward, computed by autograd through the forward's ops at the inputs of the program's first call.

The verdicts, per Function: "right"; "gradient_count" (backward returns another number of gradients
than forward has inputs); "ignores_grad_output" (the returned gradient is the forward's derivative
itself, not multiplied by grad_output); "saved_output" (backward is right once the output it saved
is replaced by the input: it saved the wrong tensor); "swapped_gradients" (the gradients of two inputs
returned in each other's place); "wrong_derivative" (none of these); and
"not_judged" where the forward is not differentiable by torch or its derivative is zero everywhere
(a rounding forward whose backward passes the gradient straight through is the author's intent)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import torch
import torch.autograd.function

MAX_FUNCTIONS = 4
VERDICTS = ("right", "wrong_derivative", "ignores_grad_output", "saved_output", "gradient_count", "swapped_gradients",
            "not_judged")
_COUNT = re.compile(r"incorrect number of gradients \(expected (\d+), got (\d+)\)")


class FunctionCalls:
    """While entered, Function.apply notes the inputs of the first call of each Function whose forward
    is the program's own code (`filename`), and `inside` says a forward is running."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.calls: dict[type, list[Any]] = {}
        self.inside = 0
        self._original: Any = None

    def __enter__(self) -> None:
        function = torch.autograd.function.Function
        original = self._original = function.__dict__["apply"]
        calls = self

        def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
            if not calls.own(cls):
                return original.__func__(cls, *args, **kwargs)
            if cls not in calls.calls and len(calls.calls) < MAX_FUNCTIONS and not kwargs:
                calls.calls[cls] = [item.detach().clone() if isinstance(item, torch.Tensor) else item for item in args]
            calls.inside += 1
            try:
                return original.__func__(cls, *args, **kwargs)
            finally:
                calls.inside -= 1

        function.apply = classmethod(apply)  # type: ignore[method-assign,assignment]

    def __exit__(self, *exc: Any) -> None:
        if self._original is not None:
            torch.autograd.function.Function.apply = self._original  # type: ignore[method-assign]

    def own(self, cls: type) -> bool:
        code = getattr(getattr(cls, "forward", None), "__code__", None)
        return code is not None and code.co_filename == self.filename


def checked(cls: type, args: list[Any]) -> dict[str, Any]:
    name = cls.__name__ if cls.__name__.isidentifier() and len(cls.__name__) <= 40 else "Function"
    entry: dict[str, Any] = {"name": name, "verdict": "not_judged", "input": None, "expected": None, "got": None}
    try:
        with torch.enable_grad():
            entry.update(_verdict(cls, args))
    except Exception:  # the program's Function fails outside what it did: nothing to say
        pass
    return entry


class _Context:
    """What a forward and a backward may use of ctx, outside Function.apply."""

    def __init__(self, count: int) -> None:
        self.needs_input_grad = (True,) * count
        self.to_save: tuple[Any, ...] = ()

    def save_for_backward(self, *tensors: Any) -> None:
        self.to_save = tensors

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        return self.to_save

    def mark_dirty(self, *args: Any) -> None:
        return None

    def mark_non_differentiable(self, *args: Any) -> None:
        return None

    def set_materialize_grads(self, value: bool) -> None:
        return None


def _fresh(args: Sequence[Any]) -> list[Any]:
    return [item.detach().clone().requires_grad_(True) if _differentiable(item) else item for item in args]


def _differentiable(item: Any) -> bool:
    return isinstance(item, torch.Tensor) and item.is_floating_point()


def _close(got: torch.Tensor, want: torch.Tensor) -> bool:
    return got.shape == want.shape and bool(torch.allclose(got.double(), want.double(), rtol=1e-4, atol=1e-6))


def _filled(grads: Sequence[Any], like: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return [torch.zeros_like(tensor) if grad is None else grad.detach()
            for grad, tensor in zip(grads, like, strict=True)]


def _verdict(cls: Any, args: list[Any]) -> dict[str, Any]:
    inputs = _fresh(args)
    positions = [index for index, item in enumerate(inputs) if _differentiable(item)]
    if not positions:
        return {}
    out = cls.apply(*inputs)
    if not isinstance(out, torch.Tensor) or out.grad_fn is None or not out.is_floating_point():
        return {}
    seed = torch.rand(out.shape, generator=torch.Generator().manual_seed(7), dtype=out.dtype) + 0.5
    tracked = [inputs[index] for index in positions]
    try:
        got = _filled(torch.autograd.grad(out, tracked, seed, allow_unused=True, retain_graph=True), tracked)
    except RuntimeError as error:
        counted = _COUNT.search(str(error))
        if counted is None:
            return {}
        return {"verdict": "gradient_count", "expected": int(counted.group(1)), "got": int(counted.group(2))}
    context = _Context(len(inputs))
    fresh = _fresh(args)
    own = cls.forward(context, *fresh)
    sources = [fresh[index] for index in positions]
    true = _filled(torch.autograd.grad(own, sources, seed, allow_unused=True, retain_graph=True), sources) \
        if isinstance(own, torch.Tensor) and own.grad_fn is not None else []
    if not any(bool(item.any()) for item in true):
        # not differentiable by torch, or a zero derivative everywhere (round, sign): the backward is the
        # author's intent, judged only on whether it uses grad_output at all
        ones = _filled(torch.autograd.grad(out, tracked, torch.ones_like(out), allow_unused=True), tracked)
        if any(bool(item.any()) for item in got) and all(_close(a, b) for a, b in zip(got, ones, strict=True)):
            return {"verdict": "ignores_grad_output", "input": positions[0]}
        return {}
    for index, (mine, right) in enumerate(zip(got, true, strict=True)):
        if _close(mine, right):
            continue
        ones = _filled(torch.autograd.grad(own, sources, torch.ones_like(own), allow_unused=True, retain_graph=True),
                       sources)
        swapped = [other for other, (theirs, right_other) in enumerate(zip(got, true, strict=True))
                   if other != index and _close(mine, right_other) and _close(theirs, right)]
        if _close(mine, ones[index]) and not _close(seed, torch.ones_like(seed)):
            verdict = "ignores_grad_output"
        elif swapped:
            verdict = "swapped_gradients"
        elif _right_with_input_saved(cls, context, own, fresh, positions, index, seed, right):
            verdict = "saved_output"
        else:
            verdict = "wrong_derivative"
        return {"verdict": verdict, "input": positions[index]}
    return {"verdict": "right"}


def _right_with_input_saved(cls: Any, context: _Context, output: torch.Tensor, inputs: list[Any],
                            positions: list[int], index: int, seed: torch.Tensor, right: torch.Tensor) -> bool:
    """The backward gives the right gradient once the forward's output it saved is the input instead."""
    if len(positions) != 1 or not any(item is output for item in [*context.to_save, *vars(context).values()]):
        return False
    given = inputs[positions[0]].detach()
    swapped = _Context(len(inputs))
    for key, value in vars(context).items():
        setattr(swapped, key, given if value is output else value)
    swapped.to_save = tuple(given if item is output else item for item in context.to_save)
    with torch.no_grad():
        returned = cls.backward(swapped, seed)
    returned = returned if isinstance(returned, tuple) else (returned,)
    found = returned[positions[index]] if positions[index] < len(returned) else None
    return isinstance(found, torch.Tensor) and _close(found, right)
