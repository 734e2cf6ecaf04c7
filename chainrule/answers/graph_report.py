"""The `graph` of a program's trace (chainrule.analysis.graph_record) read back as checked dataclasses,
outside the sandbox. From a harness point it is the student's code's own claim: every field is
checked for type and size, lines must be lines of the student's source, names must be tensor paths
or identifiers, and a single problem rejects the whole trace (chainrule.answers.trace_report)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chainrule.part_keys import is_tensor_path

MAX_OPS = 64
MAX_CALLS = 16
MAX_HOOKS = 8
MAX_FUNCTIONS = 4
MAX_SEED = 16
MAX_COUNT = 10**9
VERDICTS = ("right", "wrong_derivative", "ignores_grad_output", "saved_output", "gradient_count", "swapped_gradients",
            "not_judged")
_OP = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")
# torch's names for one op, as the program may spell it (a / b, torch.div, a.div(b)) → one name
_SAME_OP = {"__truediv__": "div", "__rtruediv__": "div", "__itruediv__": "div", "true_divide": "div", "divide": "div",
            "__mul__": "mul", "__rmul__": "mul", "multiply": "mul", "__add__": "add", "__radd__": "add",
            "__sub__": "sub", "__rsub__": "sub", "subtract": "sub", "__pow__": "pow", "__rpow__": "pow",
            "square": "pow", "__neg__": "neg", "negative": "neg", "__matmul__": "matmul", "mm": "matmul",
            "sigmoid_": "sigmoid", "nll_loss": "log_softmax"}


class MalformedGraph(ValueError):
    """The graph does not have the promised shape."""


@dataclass(frozen=True)
class GraphOp:
    op: str  # torch's name, one spelling per op ("div" for a / b)
    line: int
    count: int
    number: float | None = None  # the Python number it takes (`0.5 * t`)


@dataclass(frozen=True)
class AutogradCall:
    kind: str  # "backward" or "grad"
    line: int | None
    create_graph: bool
    retain_graph: bool
    seed: tuple[float, ...] | None
    seed_line: int | None


@dataclass(frozen=True)
class HookFact:
    line: int | None
    tensor: str | None
    before_call: int
    calls: int
    returned: int


@dataclass(frozen=True)
class FunctionFact:
    name: str
    verdict: str
    input: int | None
    expected: int | None
    got: int | None


@dataclass(frozen=True)
class StudentGraph:
    ops: tuple[GraphOp, ...] = ()
    calls: tuple[AutogradCall, ...] = ()
    hooks: tuple[HookFact, ...] = ()
    functions: tuple[FunctionFact, ...] = ()

    def op_lines(self, name: str) -> list[int]:
        return [op.line for op in self.ops if op.op == name]

    @property
    def op_names(self) -> set[str]:
        return {op.op for op in self.ops}


def op_name(name: str) -> str:
    return _SAME_OP.get(name, name.removesuffix("_") if not name.startswith("_") else name)


def validated_graph(data: Any, lines: Callable[[Any], int | None]) -> StudentGraph:
    """`lines` checks a line (chainrule.answers.trace_report), raising its own error."""
    top = checked_object(data, "graph", {"ops", "calls", "hooks", "functions"})
    return StudentGraph(
        ops=tuple(_op(item, lines) for item in _list(top.get("ops", []), MAX_OPS)),
        calls=tuple(_call(item, lines) for item in _list(top.get("calls", []), MAX_CALLS)),
        hooks=tuple(_hook(item, lines) for item in _list(top.get("hooks", []), MAX_HOOKS)),
        functions=tuple(_function(item) for item in _list(top.get("functions", []), MAX_FUNCTIONS)),
    )


def _op(data: Any, lines: Callable[[Any], int | None]) -> GraphOp:
    item = checked_object(data, "op", {"op", "line", "count", "number"})
    line, number = lines(item.get("line")), item.get("number")
    if line is None or not isinstance(item.get("op"), str) or not _OP.fullmatch(item["op"]):
        raise MalformedGraph("an op is not a named op at a line")
    if number is not None and (isinstance(number, bool) or not isinstance(number, (int, float))
                               or not math.isfinite(number)):
        raise MalformedGraph("an op's number is not a number")
    return GraphOp(op_name(item["op"]), line, _count(item.get("count")), None if number is None else float(number))


def _call(data: Any, lines: Callable[[Any], int | None]) -> AutogradCall:
    item = checked_object(data, "call", {"kind", "line", "create_graph", "retain_graph", "seed", "seed_line"})
    if item.get("kind") not in ("backward", "grad"):
        raise MalformedGraph("a call is not backward or grad")
    seed = item.get("seed")
    if seed is not None and not (isinstance(seed, list) and 0 < len(seed) <= MAX_SEED and all(
            isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            for value in seed)):
        raise MalformedGraph("a seed is not a short list of numbers")
    return AutogradCall(item["kind"], lines(item.get("line")), _bool(item.get("create_graph")),
                        _bool(item.get("retain_graph")), None if seed is None else tuple(float(v) for v in seed),
                        lines(item.get("seed_line")))


def _hook(data: Any, lines: Callable[[Any], int | None]) -> HookFact:
    item = checked_object(data, "hook", {"line", "tensor", "before_call", "calls", "returned"})
    tensor = item.get("tensor")
    if tensor is not None and not is_tensor_path(tensor):
        raise MalformedGraph("a hook's tensor is not a variable name")
    return HookFact(lines(item.get("line")), tensor, _count(item.get("before_call")), _count(item.get("calls")),
                    _count(item.get("returned")))


def _function(data: Any) -> FunctionFact:
    item = checked_object(data, "function", {"name", "verdict", "input", "expected", "got"})
    name = item.get("name")
    if not isinstance(name, str) or not _OP.fullmatch(name) or item.get("verdict") not in VERDICTS:
        raise MalformedGraph("a Function is not a name with a verdict")
    return FunctionFact(name, item["verdict"], _optional_count(item.get("input")),
                        _optional_count(item.get("expected")), _optional_count(item.get("got")))


def checked_object(data: Any, where: str, allowed: set[str],
                   error: type[ValueError] = MalformedGraph) -> dict[str, Any]:
    """`data` as a JSON object with text keys, none outside `allowed`; else `error`."""
    if not isinstance(data, dict) or not all(isinstance(key, str) for key in data) or set(data) - allowed:
        raise error(f"{where} is not an object with the expected fields")
    return data



def _list(data: Any, most: int) -> list[Any]:
    if not isinstance(data, list) or len(data) > most:
        raise MalformedGraph(f"a list of the graph has more than {most} items")
    return data


def _bool(data: Any) -> bool:
    if not isinstance(data, bool):
        raise MalformedGraph("a flag is not true or false")
    return data


def _count(data: Any) -> int:
    if isinstance(data, bool) or not isinstance(data, int) or not 0 <= data <= MAX_COUNT:
        raise MalformedGraph("a count is not a count")
    return data


def _optional_count(data: Any) -> int | None:
    return None if data is None else _count(data)
