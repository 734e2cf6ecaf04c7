"""The graph a program builds, recorded alongside chainrule.analysis.program_trace (torch, in the
sandbox): the ops that make tensors autograd tracks, each with the program's own line; every
backward() and torch.autograd.grad() with its create_graph, retain_graph and seed; the tensor hooks
(on which tensor, registered before which backward call, whether the hook returned a gradient);
and each custom torch.autograd.Function the program defines, its backward checked against its own
forward (chainrule.analysis.function_check). Everything is bounded; the summary is plain JSON that
the worker validates (chainrule.answers.graph_report) as a claim, never as a credential:

    {"ops": [{"op", "line", "count", "number"}],
     "calls": [{"kind": "backward" | "grad", "line", "create_graph", "retain_graph", "seed", "seed_line"}],
     "hooks": [{"line", "tensor", "before_call", "calls", "returned"}],
     "functions": [{"name", "verdict", "input", "expected", "got"}]}"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from chainrule.analysis.function_check import MAX_FUNCTIONS, FunctionCalls, checked

if TYPE_CHECKING:
    from chainrule.analysis.program_trace import ProgramTracer

MAX_OPS = 64  # distinct (op, line, number) triples; a loop repeats one, counted
MAX_CALLS = 16
MAX_HOOKS = 8
MAX_SEED = 16  # numbers of a seed vector kept


@dataclass
class HookRecord:
    line: int | None
    tensor: weakref.ref[Any] | None
    before_call: int  # backward() calls made before it was registered
    calls: int = 0
    returned: int = 0  # calls that returned a gradient (not None)


class GraphRecord:
    def __init__(self, tracer: ProgramTracer, *, enabled: bool = True) -> None:
        self.tracer = tracer
        self.enabled = enabled  # off: nothing recorded, no summary (a harness point after the first)
        self.ops: dict[tuple[str, int, float | None], int] = {}
        self.calls: list[dict[str, Any]] = []
        self.hooks: list[HookRecord] = []
        self.functions = FunctionCalls(tracer.filename)

    def op(self, name: str, args: Sequence[Any], result: Any) -> None:
        """An op of the program's own code whose result autograd tracks (not inside a custom Function), with
        the Python number it takes (`0.5 * t`), if one."""
        if not self.enabled or not isinstance(result, torch.Tensor) or result.grad_fn is None \
                or self.functions.inside:
            return
        line = self.tracer.direct_line()
        if line is None or not name:
            return
        numbers = [float(item) for item in args if isinstance(item, (int, float)) and not isinstance(item, bool)]
        number = round(numbers[0], 6) if len(numbers) == 1 and math.isfinite(numbers[0]) else None
        key = (name, line, number)
        if key in self.ops:
            self.ops[key] += 1
        elif len(self.ops) < MAX_OPS:
            self.ops[key] = 1

    def call(self, kind: str, line: int | None, *, create_graph: bool, retain_graph: bool, seed: Any) -> None:
        if not self.enabled or len(self.calls) >= MAX_CALLS:
            return
        values, seed_line = None, None
        if isinstance(seed, torch.Tensor) and 0 < seed.numel() <= MAX_SEED:
            numbers = [float(item) for item in seed.detach().reshape(-1).tolist()]
            values = numbers if all(math.isfinite(item) for item in numbers) else None
            made = self.tracer.created.get(id(seed))
            seed_line = made[1] if made is not None and made[0]() is seed else None
        self.calls.append({"kind": kind, "line": line, "create_graph": create_graph, "retain_graph": retain_graph,
                           "seed": values, "seed_line": seed_line})

    def autograd_grad(self, args: Sequence[Any], kwargs: dict[str, Any]) -> None:
        create = bool(kwargs.get("create_graph", args[4] if len(args) > 4 else False))
        retain = kwargs.get("retain_graph", args[3] if len(args) > 3 else None)
        seed = kwargs.get("grad_outputs", args[2] if len(args) > 2 else None)
        retained = bool(create if retain is None else retain)
        self.call("grad", self.tracer.line(), create_graph=create, retain_graph=retained, seed=seed)

    def hooked(self, args: Sequence[Any]) -> Sequence[Any]:
        """`t.register_hook(fn)`: fn wrapped so that its calls and what it returns are counted; it does
        what fn does."""
        if not self.enabled or len(args) != 2 or not isinstance(args[0], torch.Tensor) or not callable(args[1]) \
                or len(self.hooks) >= MAX_HOOKS:
            return args
        record = HookRecord(self.tracer.line(), _ref(args[0]), self.tracer.backward_count)
        self.hooks.append(record)
        hook: Callable[[Any], Any] = args[1]

        def counted(grad: Any) -> Any:
            result = hook(grad)
            record.calls += 1
            record.returned += result is not None
            return result

        return (args[0], counted)

    def summary(self, name: Callable[[Any], str | None]) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        return {
            "ops": [{"op": op, "line": line, "count": count, "number": number}
                    for (op, line, number), count in self.ops.items()],
            "calls": self.calls,
            "hooks": [{"line": hook.line, "tensor": name(hook.tensor), "before_call": hook.before_call,
                       "calls": hook.calls, "returned": hook.returned} for hook in self.hooks],
            "functions": [checked(cls, args) for cls, args in list(self.functions.calls.items())[:MAX_FUNCTIONS]],
        }


def _ref(item: Any) -> weakref.ref[Any] | None:
    try:
        return weakref.ref(item)
    except TypeError:
        return None
