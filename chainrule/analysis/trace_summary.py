"""A ProgramTracer's record as bounded plain JSON (the `trace` of a harness point, and
Analysis.program_trace for the reference), and the reference program run under the tracer.

    {"backward": [{"line", "retain_graph", "output", "seeded", "filled": [tensor, ...]}],
     "backward_count": int,
     "resets": [{"tensor", "line", "how", "before_call", "backward_line"}],
     "ops": [{"op": "detach" | "data" | "clone" | "no_grad" | "in_place" | "requires_grad",
              "line", "tensor", "result", "name", "count"}],
     "leaves": {tensor: {"requires_grad", "is_leaf", "line", "switched"}},
     "grads": {"x.grad": {"source": "autograd" | "by_hand" | "none", "line", "how"}}}

Tensors are named by the variable that holds them when the program ends (None when none does);
lines are the program's own. At most MAX_ITEMS entries per list (program_trace)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from chainrule.analysis.execution import PROGRAM_FILENAME, fresh_namespace
from chainrule.analysis.program_trace import MAX_ITEMS, ProgramTracer, grad_state, resolved

MAX_NAMES_SCANNED = 2_000


def trace_program(*, program: str, params: Mapping[str, Any], reads: Sequence[str]) -> dict[str, Any]:
    """The reference under the same tracer as the student's code: what the worker compares it with."""
    namespace = fresh_namespace(params)
    tracer = ProgramTracer(filename=PROGRAM_FILENAME, namespace=namespace, reads=reads)
    torch.manual_seed(0)
    with contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()):
        code = compile(program, PROGRAM_FILENAME, "exec")
        with tracer:
            exec(code, namespace)  # noqa: S102 - the reference, in the sandbox (as in execution.run_program)
    return trace_summary(tracer)


def trace_summary(tracer: ProgramTracer) -> dict[str, Any]:
    tracer.note_end()
    names = _names(tracer)
    watched = tracer.watched_tensors()
    summary = {
        "backward": [{"line": act.line, "retain_graph": act.retain_graph, "output": _name(names, act.output),
                      "seeded": act.seeded, "filled": act.filled} for act in tracer.backward],
        "backward_count": tracer.backward_count,
        "resets": tracer.resets[:MAX_ITEMS],
        "ops": [{"op": act.kind, "line": act.line, "tensor": _name(names, act.tensor),
                 "result": _name(names, act.result), "name": act.name, "count": act.count}
                for act in tracer.acts.values()],
        "leaves": {name: _leaf(tracer, tensor) for name, tensor in watched.items()},
        "grads": {f"{name}.grad": grad_source(tracer, name, tensor) for name, tensor in watched.items()},
    }
    graph = tracer.graph.summary(lambda ref: _name(names, ref))
    return summary if graph is None else {**summary, "graph": graph}


def grad_source(tracer: ProgramTracer, name: str, tensor: torch.Tensor) -> dict[str, Any]:
    """Who left tensor.grad as it is: autograd (backward, or what torch.autograd.grad returned)
    or the program's own code (an assignment, an in-place change, a sum started by hand)."""
    grad = tensor.grad
    if grad is None:
        return {"source": "none", "line": None, "how": None}
    last = tracer.filled.get(name)
    if last is not None and last.tensor() is tensor:
        now = grad_state(tensor)
        if now.same_as(last):
            started = tracer.added_to.get(name)
            return _by_hand(started[0], "added_to") if started else {"source": "autograd", "line": None,
                                                                      "how": "backward"}
        if now.grad is last.grad and now.empty:
            return {"source": "autograd", "line": None, "how": "zeroed"}
        return _by_hand(*tracer.touched.get(name, _assignment(tracer, tensor)))
    current = grad._version
    if any(ref() is grad and current == version for ref, version in tracer.autograd_results):
        return {"source": "autograd", "line": None, "how": "autograd.grad"}
    return _by_hand(*_assignment(tracer, tensor))


def _assignment(tracer: ProgramTracer, tensor: torch.Tensor) -> tuple[int | None, str]:
    found = tracer.assigned.get(id(tensor))
    if found is not None and found[0]() is tensor:
        return found[1], found[2]
    return None, "assigned"


def _by_hand(line: int | None, how: str) -> dict[str, Any]:
    return {"source": "by_hand", "line": line, "how": how}


def _leaf(tracer: ProgramTracer, tensor: torch.Tensor) -> dict[str, Any]:
    created = tracer.created.get(id(tensor))
    switched = [act.line for act in tracer.acts.values()
                if act.kind == "requires_grad" and act.tensor is not None and act.tensor() is tensor]
    return {"requires_grad": bool(tensor.requires_grad), "is_leaf": bool(tensor.is_leaf),
            "line": created[1] if created is not None and created[0]() is tensor else None,
            "switched": switched[-1] if switched else None}


def _names(tracer: ProgramTracer) -> dict[int, str]:
    """id → the variable holding that tensor when the program ended (the part's own names first)."""
    found: dict[int, str] = {}
    for name in tracer.watched:
        with contextlib.suppress(Exception):
            found.setdefault(id(resolved(tracer.namespace, name)), name)
    for index, (name, value) in enumerate(list(tracer.namespace.items())):
        if index >= MAX_NAMES_SCANNED:
            break
        if isinstance(value, torch.Tensor) and isinstance(name, str) and not name.startswith("_"):
            found.setdefault(id(value), name)
    return found


def _name(names: dict[int, str], ref: Any) -> str | None:
    item = ref() if ref is not None else None
    return names.get(id(item)) if item is not None else None
