"""Execute a reference program: parameters injected as variables, torch
pre-imported, prints captured, every backward call intercepted so the graph
can be inspected while it is still alive."""

from __future__ import annotations

import builtins
import contextlib
import copy
import io
import traceback
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

from chainrule.analysis.op_recording import (
    BackwardCall,
    BackwardObserver,
    ProgramRun,
    RecordingMode,
    RunMode,
)
from chainrule.errors import AnalysisError, ProgramError

PROGRAM_FILENAME = "<program>"
MAX_PRINTED_CHARS = 4000
REAL_RUN = RunMode()


class BackwardInterceptor:
    """Stands in for torch.autograd.backward (Tensor.backward calls it too)."""

    def __init__(
        self, run: ProgramRun, recorder: RecordingMode, observer: BackwardObserver | None
    ) -> None:
        self.run = run
        self.recorder = recorder
        self.observer = observer
        self.original = torch.autograd.backward
        self.invocations = 0
        self.last_proceed: Callable[[], None] | None = None

    def __call__(
        self,
        tensors: Any,
        grad_tensors: Any = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        grad_variables: Any = None,
        inputs: Any = None,
    ) -> None:
        self.invocations += 1
        limit = self.recorder.mode.backward_limit
        if limit is not None and self.invocations > limit:
            return
        seeds = grad_tensors if grad_tensors is not None else grad_variables

        def proceed() -> None:
            # Buffers must survive so we can call each node again, path by path.
            self.original(tensors, seeds, retain_graph=True, create_graph=create_graph, inputs=inputs)

        self.last_proceed = proceed
        with self.recorder.pause():
            calls = self._describe(tensors, seeds, inputs, bool(retain_graph))
            self.run.calls.extend(calls)
            if self.observer is None:
                proceed()
            else:
                self.observer(self.run, calls, proceed)

    def _describe(self, tensors: Any, seeds: Any, inputs: Any, retain_graph: bool) -> list[BackwardCall]:
        outputs = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
        if seeds is None or isinstance(seeds, torch.Tensor):
            seeds = [seeds] * len(outputs) if seeds is None else [seeds]
        wanted = [inputs] if isinstance(inputs, torch.Tensor) else inputs
        return [
            BackwardCall(
                index=len(self.run.calls) + offset,
                output=output,
                seed=_seed_tensor(output, seed),
                seed_given=seed is not None,
                inputs=list(wanted) if wanted is not None else None,
                retain_graph=retain_graph,
                seed_scale=self.run.scale_of(seed),
            )
            for offset, (output, seed) in enumerate(zip(outputs, seeds, strict=False))
        ]

    def finish(self) -> None:
        if self.recorder.mode.repeat_last_backward and self.last_proceed is not None:
            with self.recorder.pause():
                self.last_proceed()


def _seed_tensor(output: torch.Tensor, seed: Any) -> torch.Tensor | None:
    if isinstance(seed, torch.Tensor):
        return seed.detach().clone()
    if output.numel() == 1:
        return torch.ones_like(output).detach()
    return None


class _Tracking(contextlib.nullcontext):
    """torch.no_grad() as a student who ignores it reads it: a block (or decorator) that changes nothing."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def __call__(self, function: Callable[..., Any]) -> Callable[..., Any]:
        return function


@contextlib.contextmanager
def _grad_mode_ignored(active: bool) -> Iterator[None]:
    if not active:
        yield
        return
    saved = torch.no_grad, torch.autograd.no_grad, torch.inference_mode
    torch.no_grad = torch.autograd.no_grad = torch.inference_mode = _Tracking  # type: ignore[misc,assignment]
    try:
        yield
    finally:
        torch.no_grad, torch.autograd.no_grad, torch.inference_mode = saved  # type: ignore[misc]


@contextlib.contextmanager
def _backward_replaced_by(interceptor: BackwardInterceptor) -> Iterator[None]:
    original = torch.autograd.backward
    torch.autograd.backward = interceptor
    try:
        yield
    finally:
        torch.autograd.backward = original


def fresh_namespace(params: Mapping[str, Any]) -> dict[str, Any]:
    # A deep copy: a program that mutates a list parameter must not leak
    # the change into the next (counterfactual) run.
    return {
        "__builtins__": builtins,
        "__name__": "__program__",
        "torch": torch,
        **copy.deepcopy(dict(params)),
    }


def run_program(
    *,
    program: str,
    params: Mapping[str, Any],
    mode: RunMode = REAL_RUN,
    observer: BackwardObserver | None = None,
) -> ProgramRun:
    run = ProgramRun(namespace=fresh_namespace(params), number_params=_number_params(params))
    recorder = RecordingMode(run, mode)
    interceptor = BackwardInterceptor(run, recorder, observer)
    printed = io.StringIO()
    # Re-runs must draw the same random numbers as the reference run. The CPU generator alone:
    # torch.manual_seed also queues CUDA seeding with a formatted stack, ~2 ms a run.
    torch.default_generator.manual_seed(0)
    try:
        code = compile(program, PROGRAM_FILENAME, "exec")
        with contextlib.redirect_stdout(printed), _backward_replaced_by(interceptor), \
                _grad_mode_ignored(mode.grad_mode_ignored), recorder:
            exec(code, run.namespace)  # noqa: S102 - the program is the input; the sandbox contains it
            interceptor.finish()
    except AnalysisError:
        raise
    except Exception as error:
        raise ProgramError(describe_program_error(error)) from error
    run.printed = printed.getvalue()[:MAX_PRINTED_CHARS]
    return run


def describe_program_error(error: BaseException) -> str:
    line = program_line(error)
    where = f" (program line {line})" if line is not None else ""
    # SyntaxError's str() repeats the file and line we report ourselves.
    text = error.msg if isinstance(error, SyntaxError) else str(error)
    return f"{type(error).__name__}: {text}{where}"


def program_line(error: BaseException) -> int | None:
    if isinstance(error, SyntaxError) and error.filename == PROGRAM_FILENAME:
        return error.lineno
    frames = traceback.extract_tb(error.__traceback__)
    lines = [frame.lineno for frame in frames if frame.filename == PROGRAM_FILENAME]
    return lines[-1] if lines else None


def _number_params(params: Mapping[str, Any]) -> dict[float, str]:
    """Python-number parameters by value, only those no literal would likely equal (not whole numbers) and
    only where one parameter has that value: c = 2.5 reads as c in a formula, a literal 3 stays 3."""
    found: dict[float, list[str]] = {}
    for name, value in params.items():
        if isinstance(value, float) and value.is_integer() is False:
            found.setdefault(value, []).append(name)
    return {value: names[0] for value, names in found.items() if len(names) == 1}
