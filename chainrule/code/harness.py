"""The job that runs a code part INSIDE the sandbox.

The job's source (harness_source) only imports this module, which the sandbox's
zygotes have preloaded (or read from its bytecode cache), and calls run_harness:
no 22 KB of source to compile per job. It holds no answers and no reference
program. It gets the student's source, the mode, what to call or read, and the
evaluation points as plain parameters; it runs the code once per point in a fresh
namespace and reports JSON values (with, for program and fix parts, a summary of what
the code did with autograd, from chainrule.analysis.program_trace), or errors written for the student that point at
the student's own lines. The student's code runs in a child process of the job,
but it can replace anything in that child: what the child reports is untrusted
(chainrule.answers.code_grading checks it).

Input:  {"parts": [part, ...]} (one report per part, in order) or one part:
        {"mode": "function" | "program" | "fix", "source": str, "points": [{param: value}],
         function mode: "function": str, "args": [param], "arity": int, "returns": int,
                        "arg_type": "float" | "tensor", "signature": str, "forbid_autograd": bool
         program/fix:   "reads": ["x.grad", "z", ...]}
Output: {"ok": bool, "error": str | None, "stdout": str,
         "points": [{"values": {key: value}, "error": str | None,
                     "unread": {key: why}, "raised": {"type", "message", "line"} | None,
                     "trace": {…} (program and fix parts: chainrule.analysis.trace_summary)}]}
Function mode keys values by return position ("0", "1", …); program mode by the read."""

from __future__ import annotations

import builtins
import contextlib
import copy
import inspect
import io
import json
import math
import traceback
from collections.abc import Iterator
from typing import Any

from chainrule.code.encoding import StudentError, count_text, plain_value, returned_values, with_article
from chainrule.code.student_process import records_in_child
from chainrule.code_limits import MAX_CODE_CHARS
from chainrule.part_keys import is_tensor_path

STUDENT_FILENAME = "<student>"
MAX_POINTS = 32
MAX_STDOUT_CHARS = 4_000
MAX_MESSAGE_CHARS = 600
MAX_OUTPUT_CHARS = 512 * 1024
_ENTRY = """import sandbox_guest
from {module} import run_harness
sandbox_guest.emit(run_harness(sandbox_guest.job_input()))
"""


def harness_source() -> str:
    """The job's Python source: three lines that import and run this module inside the sandbox."""
    return _ENTRY.format(module=__name__)


class _BoundedText(io.StringIO):
    def write(self, text: str) -> int:
        room = MAX_STDOUT_CHARS - self.tell()
        if room > 0:
            super().write(str(text)[:room])
        return len(text)


MAX_PARTS = 16


def run_harness(job: dict[str, Any]) -> dict[str, Any]:
    """One code part, or `{"parts": [job, ...]}`: every code part of a submission in one job
    (then `{"parts": [report, ...]}`, each part's code in its own child process)."""
    if isinstance(job, dict) and isinstance(job.get("parts"), list) and len(job["parts"]) <= MAX_PARTS:
        return {"parts": [_run_one_part(part) for part in job["parts"]]}
    return _run_one_part(job)


def _run_one_part(job: dict[str, Any]) -> dict[str, Any]:
    """The part's report is composed here, in the process that never runs the student's code; only
    the per-point records and the printed text come from the child that does."""
    try:
        request = _request(job)
        code = _compiled(request["source"])
    except StudentError as error:
        return _report([], str(error), "")
    outcome = records_in_child(lambda: _run_points(request, code), len(request["points"]))
    if isinstance(outcome, str):
        return _report([], outcome, "")
    points = outcome["points"]
    return _report(points, next((p["error"] for p in points if p["error"]), None), outcome["stdout"])


def _run_points(request: dict[str, Any], code: Any) -> dict[str, Any]:
    printed = _BoundedText()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        # the program's graph is recorded at the first point only: the worker compares it there
        results = [_run_point(request, code, point, graph=index == 0) for index, point in enumerate(request["points"])]
    return {"points": results, "stdout": printed.getvalue()}


def _report(points: list[dict[str, Any]], error: str | None, stdout: str) -> dict[str, Any]:
    report = {"ok": error is None, "error": error, "points": points, "stdout": stdout[:MAX_STDOUT_CHARS]}
    if len(json.dumps(report)) > MAX_OUTPUT_CHARS:
        too_big = "Your code's results are too large to grade: return or keep only the gradients asked for."
        return {"ok": False, "error": too_big, "points": [], "stdout": report["stdout"]}
    return report


def _request(job: Any) -> dict[str, Any]:
    """The grader's own input, checked so a misconfigured part fails clearly."""
    if not isinstance(job, dict):
        raise StudentError("The grader's harness input is invalid (not an object).")
    request = {"arg_type": "float", "returns": 1, "forbid_autograd": False, "reads": [], "args": [], **job}
    try:
        _require(request["mode"] in ("function", "program", "fix") and isinstance(request["source"], str), "mode")
        points, reads = request["points"], request["reads"]
        _require(isinstance(points, list) and len(points) <= MAX_POINTS and
                 all(isinstance(point, dict) for point in points), "points")
        _require(all(is_tensor_path(read) for read in reads), "reads")
        if request["mode"] == "function":
            _require(str(request["function"]).isidentifier() and request["arg_type"] in ("float", "tensor"), "function")
            _require(request.setdefault("arity", len(request["args"])) == len(request["args"]), "arity")
            _require(isinstance(request["returns"], int) and request["returns"] >= 1, "returns")
            _require(all(name in point for point in points for name in request["args"]), "args")
            request.setdefault("signature", f"{request['function']}({', '.join(request['args'])})")
    except (KeyError, TypeError) as error:
        raise StudentError(f"The grader's harness input is invalid ({type(error).__name__} {error}).") from None
    if len(request["source"]) > MAX_CODE_CHARS:
        raise StudentError(f"Your code is too long (more than {MAX_CODE_CHARS} characters).")
    return request


def _require(condition: bool, field: str) -> None:
    if not condition:
        raise StudentError(f"The grader's harness input is invalid ({field}).")


def _compiled(source: str) -> Any:
    try:  # dont_inherit: this file's `from __future__` must not change the student's code
        return compile(source, STUDENT_FILENAME, "exec", dont_inherit=True)
    except SyntaxError as error:
        raise StudentError(syntax_message(error, source)) from None
    except (ValueError, RecursionError, MemoryError, OverflowError) as error:
        raise StudentError(f"Your code cannot be compiled: {error}") from None


def syntax_message(error: SyntaxError, source: str) -> str:
    line = error.lineno or 0
    lines = source.splitlines()
    text = lines[line - 1] if 0 < line <= len(lines) else (error.text or "").rstrip("\n")
    where = f" (line {line})" if line else ""
    if not text.strip():
        return _clipped(f"{type(error).__name__}: {error.msg}{where}")
    caret = "".join(char if char == "\t" else " " for char in text[: max((error.offset or 1) - 1, 0)]) + "^"
    return _clipped(f"{type(error).__name__}: {error.msg}{where}\n    {text[:200]}\n    {caret[:201]}")


# Bidirectional controls (U+202A-U+202E, U+2066-U+2069, U+200E/F): in an exception message they would
# reorder the feedback around them on the student's and the staff's page.
BIDI_CONTROLS = dict.fromkeys([*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F], "\ufffd")


def _clipped(text: str) -> str:
    text = text.translate(BIDI_CONTROLS)
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 1] + "…"


def _run_point(request: dict[str, Any], code: Any, point: dict[str, Any], *, graph: bool = True) -> dict[str, Any]:
    try:
        import numpy as np
        import torch
    except ImportError:  # a by-hand part runs in a job where torch does not exist
        return _run_plain_point(request, code, point)
    torch.default_generator.manual_seed(0)  # torch.manual_seed also queues CUDA seeding with a formatted stack: 2 ms
    torch.set_grad_enabled(True)  # undo what the code may have changed at the previous point
    torch.set_default_dtype(torch.float32)
    namespace = {"__builtins__": builtins, "__name__": "__student__", "torch": torch, "math": math, "np": np,
                 **copy.deepcopy(point)}
    function_mode = request["mode"] == "function"
    tracer = None if function_mode else program_tracer(request, namespace, graph=graph)
    with _autograd_refused(torch, function_mode and bool(request["forbid_autograd"])):
        try:
            with tracer if tracer is not None else contextlib.nullcontext():
                exec(code, namespace)  # noqa: S102 - student code, inside the sandbox
        except BaseException as error:  # a student's failure is reported, never raised
            if function_mode:
                return {"values": {}, "error": failure_message(error, request["source"])}
            return traced(_read_program(request, namespace, _raised(error, request["source"])), tracer)
        if function_mode:
            return _call_function(request, namespace, point)
    return traced(_read_program(request, namespace, None), tracer)


def program_tracer(request: dict[str, Any], namespace: dict[str, Any], *, graph: bool = True) -> Any:
    """What the student's program does with autograd, line by line (chainrule.analysis.program_trace:
    the recorder the reference is analysed with). Torch jobs have chainrule on their path, preloaded;
    without it the part is graded on its values alone."""
    try:
        from chainrule.analysis.program_trace import ProgramTracer
    except ImportError:
        return None
    return ProgramTracer(filename=STUDENT_FILENAME, namespace=namespace, reads=request["reads"], graph=graph)


def traced(point: dict[str, Any], tracer: Any) -> dict[str, Any]:
    """The point's report with the tracer's summary (chainrule.answers.trace_report checks it)."""
    if tracer is None:
        return point
    try:
        from chainrule.analysis.trace_summary import trace_summary

        return {**point, "trace": trace_summary(tracer)}
    except Exception:  # a summary the student's objects break is no summary
        return point


def _run_plain_point(request: dict[str, Any], code: Any, point: dict[str, Any]) -> dict[str, Any]:
    """Plain Python floats only: the sandbox hid torch from this job (a "by hand" part)."""
    namespace = {"__builtins__": builtins, "__name__": "__student__", "math": math, **copy.deepcopy(point)}
    try:
        exec(code, namespace)  # noqa: S102 - student code, inside the sandbox
    except BaseException as error:
        if request["mode"] == "function":
            return {"values": {}, "error": _by_hand_message(error, request["source"])}
        return _read_program(request, namespace, _raised(error, request["source"]))
    if request["mode"] == "function":
        return _call_function(request, namespace, point)
    return _read_program(request, namespace, None)


def _by_hand_message(error: BaseException, source: str) -> str:
    if isinstance(error, ImportError) and "torch" in str(error):
        return ("This part asks for the derivative by hand: torch is not available here. "
                "Compute the gradient with plain Python arithmetic (math is imported for you).")
    return failure_message(error, source)


@contextlib.contextmanager
def _autograd_refused(torch: Any, refuse: bool) -> Iterator[None]:
    """"Implement it by hand" parts may switch autograd off: a teaching rule, not a security boundary."""
    if not refuse:
        yield
        return
    def refused(*args: Any, **kwargs: Any) -> None:
        raise StudentError("This part asks for the derivative by hand: backward() and torch.autograd.grad are off.")

    class RefusedEngine:  # the C++ engine behind backward(), reached directly (Variable._execution_engine)
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            refused()

        def __getattr__(self, name: str) -> Any:
            return refused

    # Each entry point to a derivative: reverse mode (also the engine itself), forward mode's dual numbers.
    places = [(torch.autograd, "backward"), (torch.autograd, "grad"), (torch.Tensor, "backward"),
              (torch.autograd.Variable, "_execution_engine"), (torch._C, "_ImperativeEngine"),
              (torch.autograd.forward_ad, "make_dual"), (torch.autograd.forward_ad, "unpack_dual")]
    saved = [(owner, name, owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name))
             for owner, name in places]
    for owner, name, _ in saved:
        stand_in: Any = RefusedEngine.__new__(RefusedEngine) if name == "_execution_engine" else (
            RefusedEngine if name == "_ImperativeEngine" else refused)
        setattr(owner, name, stand_in)
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _call_function(request: dict[str, Any], namespace: dict[str, Any], point: dict[str, Any]) -> dict[str, Any]:
    try:
        function = _student_function(request, namespace)
        returned = function(*[_argument(point[name], request["arg_type"]) for name in request["args"]])
        return {"values": returned_values(returned, request), "error": None}
    except StudentError as error:
        return {"values": {}, "error": str(error)}
    except BaseException as error:  # SystemExit from the student's code is a message too
        return {"values": {}, "error": _by_hand_message(error, request["source"])}


def _student_function(request: dict[str, Any], namespace: dict[str, Any]) -> Any:
    name, signature = request["function"], request["signature"]
    function = namespace.get(name)
    if function is None:
        raise StudentError(f"Your code does not define {signature}.")
    if not callable(function):
        kind = with_article(type(function).__name__)
        raise StudentError(f"{name} is {kind}, not a function: define {signature} with def.")
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return function  # no signature to inspect (a builtin): calling it will tell
    try:
        inspect.signature(function).bind(*range(request["arity"]))
    except TypeError:
        wanted, given = count_text(request["arity"], "argument"), count_text(len(parameters), "argument")
        raise StudentError(f"{name} must take {wanted}, as in {signature}; yours takes {given}.") from None
    return function


def _argument(value: Any, arg_type: str) -> Any:
    if arg_type == "tensor":
        import torch

        return torch.tensor(value, dtype=torch.float64)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else copy.deepcopy(value)


def _read_program(request: dict[str, Any], namespace: dict[str, Any], raised: dict[str, Any] | None) -> dict[str, Any]:
    values, unread = {}, {}
    for key in request["reads"]:
        try:
            values[key] = plain_value(_resolve(namespace, key), key, [0])
        except StudentError as error:
            unread[key] = str(error)
        except Exception as error:  # a property of the student's own class
            unread[key] = _clipped(f"{key} cannot be read: {type(error).__name__}: {error}")
    failure = raised.pop("failure") if raised else None
    return {"values": values, "unread": unread, "raised": raised, "error": failure}


def _resolve(namespace: dict[str, Any], key: str) -> Any:
    head, *attributes = key.split(".")
    if head not in namespace:
        raise StudentError(f"Your code defines no variable {head}, so {key} cannot be read.")
    found, path = namespace[head], head
    for attribute in attributes:
        if not hasattr(found, attribute):
            raise StudentError(f"{path} is {with_article(type(found).__name__)}, so it has no .{attribute}.")
        found, path = getattr(found, attribute), f"{path}.{attribute}"
    return found


def _raised(error: BaseException, source: str) -> dict[str, Any]:
    return {"type": type(error).__name__, "message": exception_message(error, source), "line": student_line(error),
            "failure": failure_message(error, source)}


def student_line(error: BaseException) -> int | None:
    """The last line of the student's own code in the traceback: harness and
    library frames are never shown."""
    lines = [lineno for frame, lineno in traceback.walk_tb(error.__traceback__)
             if frame.f_code.co_filename == STUDENT_FILENAME]
    return lines[-1] if lines else None


def failure_message(error: BaseException, source: str) -> str:
    if isinstance(error, SystemExit):
        return "Your code called exit() or sys.exit(); remove it: the grader runs your code itself."
    if isinstance(error, StudentError):  # a rule of the part, broken at module level
        return str(error)
    return "Your code raised " + exception_message(error, source)


def exception_message(error: BaseException, source: str) -> str:
    """`Type: message (line n: the student's line)`."""
    try:
        text = str(error)
    except Exception:  # a student's exception class whose __str__ fails
        text = ""
    line = student_line(error)
    lines = source.splitlines()
    where = f" (line {line}: {lines[line - 1].strip()[:120]})" if line and line <= len(lines) else ""
    return _clipped(f"{type(error).__name__}: {text}{where}" if text else f"{type(error).__name__}{where}")
