"""Run a reference program while recording what autograd needs explained:
every forward operation (with its value and the node it produced) and every
backward call (with its output and seed). A RunMode turns the same run into a
counterfactual one (detach as identity, other ReLU slopes, fewer or more
backward calls)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch.overrides import TorchFunctionMode

from chainrule.analysis.kink_stand_ins import kink_stand_in
from chainrule.analysis.stand_ins import DETACH_FUNCTIONS, stand_in

MAX_SCALED = 1_000


@dataclass(frozen=True)
class RunMode:
    detach_identity: bool = False
    grad_mode_ignored: bool = False  # torch.no_grad() / inference_mode() blocks tracked as if absent
    relu_slopes: str | None = None  # see stand_ins.Relu
    kinks_ignored: str | None = None  # "backward" or "both", see kink_stand_ins
    backward_limit: int | None = None  # run only the first N backward calls
    repeat_last_backward: bool = False  # one backward call too many


@dataclass
class ForwardOp:
    seq: int  # position among all intercepted calls: equal across re-runs
    func_name: str
    value: torch.Tensor  # detached copy of the output at creation time
    grad_fn: Any | None  # held so id(grad_fn) stays unique for the whole run
    inputs: list[torch.Tensor]
    output: torch.Tensor
    is_detach: bool
    scalars: list[float] = field(default_factory=list)  # Python numbers among the arguments (the 1 of 1 + x)
    # an op with several outputs sharing one node (a, b = x.chunk(2); `for xi in x`): every output and its
    # value, by its number on the node; empty for an op with one output
    outputs: dict[int, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    # the call's outputs on other nodes (torch.tensor_split, torch.meshgrid): 1, 2, … in their order
    piece: int = 0

    def output_value(self, output: int) -> torch.Tensor | None:
        if self.outputs:
            return self.outputs[output][1] if output in self.outputs else None
        return self.value if output == 0 else None

    def output_tensor(self, output: int) -> torch.Tensor | None:
        if self.outputs:
            return self.outputs[output][0] if output in self.outputs else None
        return self.output if output == 0 else None


@dataclass
class BackwardCall:
    index: int
    output: torch.Tensor
    seed: torch.Tensor | None  # None only if torch is about to reject the call
    seed_given: bool
    inputs: list[torch.Tensor] | None
    retain_graph: bool = False  # the program kept the graph for another backward call through it
    seed_scale: float | None = None  # the seed was written as this Python number times a tensor


@dataclass
class ProgramRun:
    namespace: dict[str, Any]
    ops: list[ForwardOp] = field(default_factory=list)
    calls: list[BackwardCall] = field(default_factory=list)
    printed: str = ""
    # untracked tensors written as a Python number times a tensor (a seed `2 * v`): id → (tensor, number)
    scaled: dict[int, tuple[torch.Tensor, float]] = field(default_factory=dict)
    # the exercise's Python-number parameters that are not whole numbers, by value: a saved operand 2.5 is c
    number_params: dict[float, str] = field(default_factory=dict)

    def scale_of(self, tensor: Any) -> float | None:
        found = self.scaled.get(id(tensor))
        return found[1] if found is not None and found[0] is tensor else None


class BackwardObserver(Protocol):
    def __call__(
        self, run: ProgramRun, calls: list[BackwardCall], proceed: Callable[[], None]
    ) -> None: ...


class RecordingMode(TorchFunctionMode):
    def __init__(self, run: ProgramRun, mode: RunMode) -> None:
        super().__init__()
        self.run = run
        self.mode = mode
        self.paused = False
        self.seq = 0

    @contextlib.contextmanager
    def pause(self) -> Iterator[None]:
        """Our own torch calls (during backward inspection) are not the program's."""
        previous, self.paused = self.paused, True
        try:
            yield
        finally:
            self.paused = previous

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        if self.paused:
            return func(*args, **kwargs)
        self.seq += 1
        replacement = stand_in(
            func,
            args,
            kwargs,
            detach_identity=self.mode.detach_identity,
            relu_slopes=self.mode.relu_slopes,
        )
        if replacement is None and self.mode.kinks_ignored:
            replacement = kink_stand_in(func, args, kwargs, self.mode.kinks_ignored)
        result = replacement() if replacement else func(*args, **kwargs)
        self._record(self.seq, func, [*args, *kwargs.values()], result)
        return result

    def _record(self, seq: int, func: Callable[..., Any], args: list[Any], result: Any) -> None:
        is_detach = func in DETACH_FUNCTIONS
        outputs = result if isinstance(result, (tuple, list)) else [result]
        recorded: dict[int, ForwardOp] = {}  # id(grad_fn) → its op: outputs of one node are one op
        for output in outputs:
            if not isinstance(output, torch.Tensor):
                continue
            grad_fn = output.grad_fn
            if grad_fn is None and not is_detach:
                self._scaled(func, args, output)
                continue
            op = recorded.get(id(grad_fn))
            if op is not None:
                if op.outputs:  # another output of an op with several (a, b = x.chunk(2))
                    op.outputs[output.output_nr] = (output, output.detach().clone())
                continue
            op = recorded[id(grad_fn)] = ForwardOp(
                seq=seq,
                func_name=getattr(func, "__name__", type(func).__name__),
                value=output.detach().clone(),
                grad_fn=grad_fn,
                inputs=list(_tensors_in(args)),
                output=output,
                is_detach=is_detach,
                scalars=[float(item) for item in args
                         if isinstance(item, (int, float)) and not isinstance(item, bool)],
                piece=len(recorded),  # the nodes recorded so far from this call
            )
            if len(getattr(grad_fn, "_input_metadata", ())) > 1:
                op.outputs[output.output_nr] = (output, op.value)
            self.run.ops.append(op)


    def _scaled(self, func: Callable[..., Any], args: list[Any], output: torch.Tensor) -> None:
        name = getattr(func, "__name__", "")
        numbers = [item for item in args if isinstance(item, (int, float)) and not isinstance(item, bool)]
        tensors = [item for item in args if isinstance(item, torch.Tensor)]
        if len(numbers) != 1 or len(tensors) != 1 or len(self.run.scaled) >= MAX_SCALED or numbers[0] == 0:
            return
        if name in ("mul", "__mul__", "__rmul__"):
            self.run.scaled[id(output)] = (output, float(numbers[0]))
        elif name in ("div", "__truediv__") and args[0] is tensors[0]:
            self.run.scaled[id(output)] = (output, 1 / float(numbers[0]))


def _tensors_in(items: Sequence[Any]) -> Iterator[torch.Tensor]:
    for item in items:
        if isinstance(item, torch.Tensor):
            yield item
        elif isinstance(item, (list, tuple)):
            yield from _tensors_in(item)
