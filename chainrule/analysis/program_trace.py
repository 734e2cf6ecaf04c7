"""What a program does with autograd, recorded while it runs, each act with the line of the
program's own code that did it (torch, in the sandbox).

The same recorder runs on the student's program (chainrule.code.harness, program and fix parts,
at every evaluation point) and on the reference (chainrule.analysis.program), so the worker
compares like with like (chainrule.answers.code_comparison). It records:
- every backward() (Tensor.backward, torch.autograd.backward): its retain_graph, its output, and
  which of the part's tensors it filled (their .grad changed);
- every change to one of those .grad made by the program itself (zero_(), `grad = None`,
  optimizer.zero_grad(), an in-place op, an assignment), hence where the sum restarts;
- the ops that decide which paths carry gradient: detach(), .data, clone(), an op computed under
  torch.no_grad(), an in-place op on a tracked tensor, requires_grad switched;
- where each tensor was created, and what torch.autograd.grad returned.
chainrule.analysis.trace_summary turns this into bounded plain JSON. In the harness the student's
code runs in the same process and can tamper with all of it: the summary is a claim the worker
checks, never a credential."""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch._tensor
import torch.overrides
from torch.overrides import TorchFunctionMode

from chainrule.analysis import graph_record
from chainrule.analysis.graph_record import GraphRecord

MAX_ITEMS = 16  # backward calls, resets and ops described one by one; the rest are counted
MAX_CREATED = 4096
_BACKWARD = (torch.Tensor.backward, torch.autograd.backward)
_DESCRIPTORS = {name: torch._C.TensorBase.__dict__[name] for name in ("grad", "data", "requires_grad")}
_IN_PLACE_DUNDERS = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__"}
_CUTS = ("detach", "detach_")
_ZERO_STARTS = {"zeros", "zeros_like"}
_GRADIENT_SUMS = {"__add__", "__radd__", "__sub__", "__rsub__", "add", "sub", "__iadd__", "__isub__", "add_", "sub_"}
# Frames between the program's call and this recorder: torch's dispatch, not the program's code.
_DISPATCH_FILES = frozenset({__file__, graph_record.__file__, torch.overrides.__file__, torch._tensor.__file__})


@dataclass
class GradState:
    """A watched tensor's .grad at one moment: the object, its version and a copy of its value."""

    tensor: weakref.ref[torch.Tensor]
    grad: torch.Tensor | None
    version: int
    value: torch.Tensor | None

    def same_as(self, other: GradState) -> bool:
        if self.tensor() is not other.tensor() or self.grad is not other.grad:
            return False
        if self.grad is None or other.value is None or self.value is None:
            return self.grad is None
        return self.version == other.version and bool(torch.equal(self.value, other.value))

    @property
    def empty(self) -> bool:
        return self.value is None or not bool(self.value.any())


@dataclass
class Act:
    """One thing the program did, at a line of its own code."""

    kind: str
    line: int | None
    tensor: weakref.ref[Any] | None = None
    result: weakref.ref[Any] | None = None
    name: str = ""
    count: int = 1


@dataclass
class BackwardAct:
    line: int | None
    retain_graph: bool
    output: weakref.ref[Any] | None
    seeded: bool
    filled: list[str] = field(default_factory=list)


class ProgramTracer(TorchFunctionMode):
    """`with ProgramTracer(...): exec(code, namespace)`; `reads` are the part keys ("x.grad")."""

    def __init__(self, *, filename: str, namespace: dict[str, Any], reads: Sequence[str], graph: bool = True) -> None:
        super().__init__()
        self.filename = filename
        self.namespace = namespace
        self.watched = list(dict.fromkeys(key.removesuffix(".grad") for key in reads if key.endswith(".grad")))
        self.backward: list[BackwardAct] = []
        self.backward_count = 0
        self.resets: list[dict[str, Any]] = []
        self.acts: dict[tuple[str, int | None], Act] = {}
        self.created: dict[int, tuple[weakref.ref[Any], int | None]] = {}
        self.created_full = False
        self.autograd_results: list[tuple[weakref.ref[Any], int]] = []
        self.zero_starts: list[tuple[weakref.ref[Any], int]] = []  # torch.zeros(_like): where a sum may start
        self.filled: dict[str, GradState] = {}  # .grad as the last backward that filled it left it
        self.touched: dict[str, tuple[int | None, str]] = {}  # the program's last change to a watched .grad
        self.assigned: dict[int, tuple[weakref.ref[Any], int | None, str]] = {}  # `t.grad = …`, by tensor
        self.added_to: dict[str, tuple[int | None, str]] = {}  # a backward summed into a .grad made by hand
        self.graph = GraphRecord(self, enabled=graph)  # the ops, calls, hooks and custom Functions of its graph

    def __enter__(self) -> ProgramTracer:
        self.graph.functions.__enter__()
        try:
            super().__enter__()
        except BaseException:
            self.graph.functions.__exit__()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            super().__exit__(*exc)
        finally:
            self.graph.functions.__exit__()

    def __torch_function__(self, func: Callable[..., Any], types: Any, args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func in _BACKWARD:
            return self._backward(func, args, kwargs)
        name, attribute = getattr(func, "__name__", ""), _attribute(func)
        with _never_failing():
            self._before(name, attribute, args)
            if name == "register_hook":
                args = self.graph.hooked(args)
            elif func is torch.autograd.grad:
                self.graph.autograd_grad(args, kwargs)
        result = func(*args, **kwargs)
        with _never_failing():
            self._after(func, name, attribute, (args, kwargs), result)
            if attribute is None:
                self.graph.op(name, args, result)
        return result

    def line(self) -> int | None:
        """The innermost frame of the program's own code: the line of `opt.zero_grad()` for what
        torch.optim does inside it."""
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename == self.filename:
                return frame.f_lineno
            frame = frame.f_back  # type: ignore[assignment]
        return None

    def direct_line(self) -> int | None:
        """The line only when the program's own code made the call (not torch.optim's step)."""
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename in _DISPATCH_FILES:
            frame = frame.f_back  # type: ignore[assignment]
        return frame.f_lineno if frame is not None and frame.f_code.co_filename == self.filename else None

    def watched_tensors(self) -> dict[str, torch.Tensor]:
        found = {}
        for name in self.watched:
            with _never_failing():
                tensor = resolved(self.namespace, name)
                if isinstance(tensor, torch.Tensor):
                    found[name] = tensor
        return found

    def _before(self, name: str, attribute: tuple[str, str] | None, args: Sequence[Any]) -> None:
        target = args[0] if args else None
        if attribute == ("grad", "__set__") and isinstance(target, torch.Tensor):
            how = "set_none" if len(args) < 2 or args[1] is None else "assigned"
            self._grad_changed(target, how, assigned=True)
        elif isinstance(target, torch.Tensor) and (_in_place(name) or attribute == ("requires_grad", "__set__")):
            self._in_place(target, name if attribute is None else "requires_grad")

    def _grad_changed(self, tensor: torch.Tensor, how: str, *, assigned: bool) -> None:
        line = self.line()
        if assigned and len(self.assigned) < MAX_CREATED:
            self.assigned[id(tensor)] = (weakref.ref(tensor), line, how)
        for name, watched in self.watched_tensors().items():
            if watched is tensor:
                self.touched[name] = (line, how)

    def _in_place(self, target: torch.Tensor, name: str) -> None:
        for watched_name, watched in self.watched_tensors().items():
            grad = watched.grad
            if grad is not None and _shares_storage(grad, target):
                self.touched[watched_name] = (self.line(), name)
                return
        if name in ("requires_grad_", "requires_grad"):
            self.act("requires_grad", target, target, name)
        elif torch.is_grad_enabled() and target.requires_grad:
            self.act("in_place", target, target, name)

    def _after(self, func: Callable[..., Any], name: str, attribute: tuple[str, str] | None,
               called: tuple[Sequence[Any], dict[str, Any]], result: Any) -> None:
        args = called[0]
        source = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if func is torch.autograd.grad and isinstance(result, (tuple, list)):
            self.autograd_results += [(weakref.ref(item), item._version) for item in result
                                      if isinstance(item, torch.Tensor)][:MAX_CREATED]
        elif name in _GRADIENT_SUMS and isinstance(result, torch.Tensor) and self._autograd_sum(called, name):
            self.autograd_results.append((weakref.ref(result), result._version))  # g1 + g2, grad += g2
        elif name in _ZERO_STARTS and isinstance(result, torch.Tensor) and len(self.zero_starts) < MAX_CREATED:
            self.zero_starts.append((weakref.ref(result), result._version))
        if not isinstance(result, torch.Tensor) or (attribute is not None and attribute[0] != "data"):
            return
        if name in _CUTS and source is not None and source.requires_grad:
            self.act("detach", source, result, name)
        elif attribute == ("data", "__get__") and source is not None and source.requires_grad:
            self.act("data", source, result, ".data")
        elif name == "clone" and source is not None and source.requires_grad:
            self.act("clone", source, result, name)
        elif result.grad_fn is None and not torch.is_grad_enabled() and not _in_place(name) and _tracked(called):
            self.act("no_grad", source, result, name)
        if result.grad_fn is None:
            self._created(result)

    def _created(self, tensor: torch.Tensor) -> None:
        """Where a tensor without history was made. An id is reused once its tensor is gone (a temporary
        made and dropped before the weight), so an entry whose tensor died gives way; when the record is
        full, the dead entries are dropped."""
        known = self.created.get(id(tensor))
        if known is not None and known[0]() is not None:
            return  # made earlier: an op that returns its input (x.requires_grad_())
        if known is None and len(self.created) >= MAX_CREATED:
            if self.created_full:
                return
            self.created = {key: item for key, item in self.created.items() if item[0]() is not None}
            self.created_full = len(self.created) > MAX_CREATED // 2  # most still alive: stop looking
            if len(self.created) >= MAX_CREATED:
                return
        self.created[id(tensor)] = (weakref.ref(tensor), self.line())

    def act(self, kind: str, tensor: Any, result: Any, name: str) -> None:
        """An op of the program's own code; one per kind and line, counted (a loop repeats it)."""
        line = self.direct_line()
        if line is None or self.graph.functions.inside:  # a custom Function's forward runs without autograd
            return
        known = self.acts.get((kind, line))
        if known is not None:
            known.count += 1
        elif len(self.acts) < MAX_ITEMS:
            self.acts[(kind, line)] = Act(kind, line, _ref(tensor), _ref(result), name)

    def _backward(self, func: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        self.backward_count += 1
        retain = kwargs.get("retain_graph", args[2] if len(args) > 2 else None)
        create = kwargs.get("create_graph", args[3] if len(args) > 3 else False)
        seed = kwargs.get("gradient", kwargs.get("grad_tensors", args[1] if len(args) > 1 else None))
        output = args[0] if args else kwargs.get("tensors")
        act = BackwardAct(self.line(), bool(create if retain is None else retain), _ref(output), seed is not None)
        if len(self.backward) < MAX_ITEMS:
            self.backward.append(act)
        with _never_failing():
            self.graph.call("backward", act.line, create_graph=bool(create), retain_graph=act.retain_graph, seed=seed)
        watched = self.watched_tensors()
        before = {name: grad_state(tensor) for name, tensor in watched.items()}
        with _never_failing():
            self._note_restarts(before, act.line)
        try:
            return func(*args, **kwargs)
        finally:
            with _never_failing():
                self._note_filled(watched, before, act)

    def _autograd_sum(self, called: tuple[Sequence[Any], dict[str, Any]], name: str) -> bool:
        """Every tensor added or subtracted is what torch.autograd.grad returned (or such a sum): the gradient
        of L1 + L2 put together from autograd's own two, not numbers made by hand. An in-place sum's target
        (grad += g2) is checked as it was before the op bumped its version."""
        if len(self.autograd_results) >= MAX_CREATED:
            return False
        tensors = [item for item in called[0] if isinstance(item, torch.Tensor)]
        zeros = [item for item in called[0] if not isinstance(item, torch.Tensor) and item == 0]  # sum(gs) from 0
        if called[1] or len(tensors) + len(zeros) != len(called[0]):
            return False  # g + 4 or add(g, h, alpha=2): numbers of the program's own in it
        made = [(ref(), version) for ref, version in self.autograd_results]
        starts = [(ref(), version) for ref, version in self.zero_starts]  # acc = zeros_like(x); acc += g
        bumped = 1 if _in_place(name) else 0

        def among(item: torch.Tensor, index: int, found: list[tuple[Any, int]]) -> bool:
            return any(known is item and version == item._version - (bumped if index == 0 else 0)
                       for known, version in found)

        grads = [among(item, index, made) for index, item in enumerate(tensors)]
        return any(grads) and all(grad or among(item, index, starts)
                                  for index, (item, grad) in enumerate(zip(tensors, grads, strict=True)))

    def _note_restarts(self, before: dict[str, GradState], line: int | None) -> None:
        """A .grad that is not what the last backward left was restarted by the program; a sum that
        starts from a .grad that is not empty starts from numbers made by hand."""
        for name, state in before.items():
            last = self.filled.get(name)
            if last is not None and state.same_as(last):
                continue  # the sum goes on
            if last is not None:
                where, how = (None, "new_tensor") if state.tensor() is not last.tensor() else \
                    self.touched.get(name, (None, "changed"))
                if len(self.resets) < MAX_ITEMS:
                    self.resets.append({"tensor": name, "line": where, "how": how, "before_call": self.backward_count,
                                        "backward_line": line})
            if state.empty:
                self.added_to.pop(name, None)
            else:
                self.added_to[name] = self.touched.get(name, (None, "assigned"))

    def note_end(self) -> None:
        """A .grad changed after the last backward() (zeroed at the very end) is a reset too, before a call
        that never comes: without it the program was said to 'never reset' a .grad that ends as zeros."""
        if not self.backward_count:
            return
        added_to = dict(self.added_to)  # what the end leaves in .grad starts no sum
        self.backward_count += 1
        try:
            with _never_failing():  # only a .grad left empty (zeroed or None): `x.grad /= 2` at the end is no reset
                emptied = {name: grad_state(tensor) for name, tensor in self.watched_tensors().items()
                           if tensor.grad is None or not bool(tensor.grad.detach().any())}
                self._note_restarts(emptied, None)
        finally:
            self.backward_count -= 1
            self.added_to = added_to

    def _note_filled(self, watched: dict[str, torch.Tensor], before: dict[str, GradState], act: BackwardAct) -> None:
        for name, tensor in watched.items():
            after = grad_state(tensor)
            if after.grad is not None and not after.same_as(before[name]):
                self.filled[name] = after
                self.touched.pop(name, None)
                act.filled.append(name)


def grad_state(tensor: torch.Tensor) -> GradState:
    grad = tensor.grad
    value = grad.detach().clone() if grad is not None else None
    return GradState(weakref.ref(tensor), grad, grad._version if grad is not None else 0, value)


def resolved(namespace: dict[str, Any], name: str) -> Any:
    head, *attributes = name.split(".")
    found = namespace.get(head)
    for attribute in attributes:
        found = getattr(found, attribute, None)
    return found


def _attribute(func: Callable[..., Any]) -> tuple[str, str] | None:
    owner = getattr(func, "__self__", None)
    for name, descriptor in _DESCRIPTORS.items():
        if owner is descriptor:
            return name, getattr(func, "__name__", "")
    return None


def _in_place(name: str) -> bool:
    return name in _IN_PLACE_DUNDERS or (name.endswith("_") and not name.startswith("_"))


def _shares_storage(left: torch.Tensor, right: torch.Tensor) -> bool:
    pointer = left.untyped_storage().data_ptr()
    return bool(pointer != 0 and pointer == right.untyped_storage().data_ptr())


def _ref(item: Any) -> weakref.ref[Any] | None:
    try:
        return weakref.ref(item)
    except TypeError:
        return None


def _tracked(called: tuple[Sequence[Any], dict[str, Any]]) -> bool:
    """Some input requires grad (an op under no_grad that would otherwise have been recorded)."""
    items = [*called[0], *called[1].values()]
    flat = [inner for item in items for inner in (item if isinstance(item, (list, tuple)) else [item])]
    return any(isinstance(item, torch.Tensor) and item.requires_grad for item in flat)


class _never_failing:
    """The recorder must never change what the program does: its own slips are dropped."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: Any, trace: Any) -> bool:
        return kind is not None and issubclass(kind, Exception)
