"""The `trace` of a program (chainrule.analysis.trace_summary) read back as checked dataclasses,
outside the sandbox. From a harness point it is the student's code's own claim: every field is
checked for type and size, lines must exist in the student's source, names must be tensor paths,
and any problem rejects it (MalformedTrace). The reference's trace (Analysis.program_trace) is read
with the same rules."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from chainrule.answers.graph_report import MalformedGraph, StudentGraph, checked_object, validated_graph
from chainrule.part_keys import is_tensor_path

MAX_ITEMS = 16  # chainrule.analysis.program_trace.MAX_ITEMS
MAX_TENSORS = 64  # the part's reads (chainrule.answers.code_report.MAX_KEYS)
MAX_LINE = 100_000
MAX_COUNT = 10**9
_HOW = re.compile(r"[A-Za-z_.][A-Za-z0-9_.]{0,39}")
OPS = ("detach", "data", "clone", "no_grad", "in_place", "requires_grad")
CUTS = ("detach", "data", "no_grad")  # ops after which no gradient flows back
SOURCES = ("autograd", "by_hand", "none")


class MalformedTrace(ValueError):
    """The trace does not have the promised shape."""


@dataclass(frozen=True)
class BackwardSite:
    line: int | None
    retain_graph: bool
    output: str | None
    seeded: bool
    filled: tuple[str, ...]


@dataclass(frozen=True)
class GradReset:
    tensor: str
    line: int | None  # the program's line that changed .grad; None when a new tensor took the name
    how: str  # "zero_", "set_none", "assigned", "new_tensor", an in-place op's name
    before_call: int  # the backward call (1-based) the sum restarts at
    backward_line: int | None


@dataclass(frozen=True)
class TraceOp:
    op: str  # one of OPS
    line: int | None
    tensor: str | None
    result: str | None
    name: str  # the torch name ("detach", ".data", "pow" under no_grad, "mul_")
    count: int


@dataclass(frozen=True)
class LeafFact:
    requires_grad: bool
    is_leaf: bool
    line: int | None  # where the tensor was created
    switched: int | None  # where requires_grad was changed


@dataclass(frozen=True)
class GradSource:
    source: str  # one of SOURCES
    line: int | None
    how: str | None


@dataclass(frozen=True)
class ProgramTrace:
    backward: tuple[BackwardSite, ...]
    backward_count: int
    resets: tuple[GradReset, ...]
    ops: tuple[TraceOp, ...]
    leaves: dict[str, LeafFact]
    grads: dict[str, GradSource]
    graph: StudentGraph = StudentGraph()  # the ops, calls, hooks and custom Functions (empty in older traces)

    def resets_of(self, tensor: str) -> list[GradReset]:
        return [reset for reset in self.resets if reset.tensor == tensor]

    def fills_of(self, tensor: str) -> list[BackwardSite]:
        return [site for site in self.backward if tensor in site.filled]

    def cuts(self) -> list[TraceOp]:
        return [op for op in self.ops if op.op in CUTS]


def validated_trace(data: Any, *, line_count: int | None) -> ProgramTrace:
    """`line_count`: the lines of the source the trace's lines must point into (None: any)."""
    top = _object(data, "trace", {"backward", "backward_count", "resets", "ops", "leaves", "grads", "graph"})
    lines = _Lines(line_count)
    try:
        graph = validated_graph(top["graph"], lines) if "graph" in top else StudentGraph()
    except MalformedGraph as problem:
        raise MalformedTrace(str(problem)) from None
    return ProgramTrace(
        backward=tuple(_backward(item, lines) for item in _list(top.get("backward"), "backward")),
        backward_count=_count(top.get("backward_count"), "backward_count"),
        resets=tuple(_reset(item, lines) for item in _list(top.get("resets"), "resets")),
        ops=tuple(_op(item, lines) for item in _list(top.get("ops"), "ops")),
        leaves={_name(key): _leaf(value, lines) for key, value in _dict(top.get("leaves"), "leaves").items()},
        grads={_grad_key(key): _grad(value, lines) for key, value in _dict(top.get("grads"), "grads").items()},
        graph=graph,
    )


class _Lines:
    def __init__(self, count: int | None) -> None:
        self.count = MAX_LINE if count is None else count

    def __call__(self, value: Any) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= self.count:
            raise MalformedTrace("a line is not a line of the program")
        return value


def _backward(data: Any, lines: _Lines) -> BackwardSite:
    item = _object(data, "backward", {"line", "retain_graph", "output", "seeded", "filled"})
    filled = tuple(_name(name) for name in _list(item.get("filled"), "filled"))
    return BackwardSite(lines(item.get("line")), _bool(item.get("retain_graph")), _optional_name(item.get("output")),
                        _bool(item.get("seeded")), filled)


def _reset(data: Any, lines: _Lines) -> GradReset:
    item = _object(data, "reset", {"tensor", "line", "how", "before_call", "backward_line"})
    return GradReset(_name(item.get("tensor")), lines(item.get("line")), _how(item.get("how")),
                     _count(item.get("before_call"), "before_call"), lines(item.get("backward_line")))


def _op(data: Any, lines: _Lines) -> TraceOp:
    item = _object(data, "op", {"op", "line", "tensor", "result", "name", "count"})
    if item.get("op") not in OPS:
        raise MalformedTrace("unknown op")
    return TraceOp(item["op"], lines(item.get("line")), _optional_name(item.get("tensor")),
                   _optional_name(item.get("result")), _how(item.get("name")), _count(item.get("count"), "count"))


def _leaf(data: Any, lines: _Lines) -> LeafFact:
    item = _object(data, "leaf", {"requires_grad", "is_leaf", "line", "switched"})
    return LeafFact(_bool(item.get("requires_grad")), _bool(item.get("is_leaf")), lines(item.get("line")),
                    lines(item.get("switched")))


def _grad(data: Any, lines: _Lines) -> GradSource:
    item = _object(data, "grad", {"source", "line", "how"})
    if item.get("source") not in SOURCES:
        raise MalformedTrace("unknown grad source")
    how = item.get("how")
    return GradSource(item["source"], lines(item.get("line")), None if how is None else _how(how))


def _object(data: Any, where: str, allowed: set[str]) -> dict[str, Any]:
    return checked_object(data, where, allowed, MalformedTrace)


def _list(data: Any, where: str) -> list[Any]:
    if not isinstance(data, list) or len(data) > MAX_ITEMS:
        raise MalformedTrace(f"{where} is not a list of at most {MAX_ITEMS} items")
    return data


def _dict(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, dict) or len(data) > MAX_TENSORS:
        raise MalformedTrace(f"{where} is not an object of at most {MAX_TENSORS} entries")
    return data


def _bool(data: Any) -> bool:
    if not isinstance(data, bool):
        raise MalformedTrace("a flag is not true or false")
    return data


def _count(data: Any, where: str) -> int:
    if isinstance(data, bool) or not isinstance(data, int) or not 0 <= data <= MAX_COUNT:
        raise MalformedTrace(f"{where} is not a count")
    return data


def _name(data: Any) -> str:
    if not is_tensor_path(data):  # the part-key grammar: the trace names tensors by their paths
        raise MalformedTrace("a tensor name is not a variable name")
    return data


def _optional_name(data: Any) -> str | None:
    return None if data is None else _name(data)


def _grad_key(data: Any) -> str:
    if not isinstance(data, str) or not data.endswith(".grad"):
        raise MalformedTrace("a grad key is not NAME.grad")
    _name(data.removesuffix(".grad"))
    return data


def _how(data: Any) -> str:
    if not isinstance(data, str) or not _HOW.fullmatch(data):
        raise MalformedTrace("an operation name is not a name")
    return data
