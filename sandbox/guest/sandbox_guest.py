"""The module jobs import inside the sandbox: `job_input()` and `emit(obj)`.

This file is bound read-only into every job's private root. It also holds the
tiny runner that executes the job's source as `__main__`, because the same
code must work in a forked zygote child and in a freshly exec'd interpreter.
Nothing here is trusted by the grader: the job can replace any of it.
"""

from __future__ import annotations

import json
import linecache
import os
import sys
import traceback
import types
from typing import Any

JOB_FILENAME = "job.py"
_state: dict[str, Any] = {"input_json": "null", "result_fd": -1, "result_cap": 0, "emitted": False}


def job_input() -> Any:
    """The JSON input the grader attached to this job (a fresh copy each call)."""
    return json.loads(_state["input_json"])


def emit(obj: Any) -> None:
    """Send the job's result document (JSON-serialisable) to the grader, once."""
    if _state["emitted"]:
        raise RuntimeError("sandbox_guest.emit() may be called only once per job")
    payload = json.dumps(obj, separators=(",", ":")).encode()
    if len(payload) > _state["result_cap"]:
        raise ValueError(f"result is {len(payload)} bytes; the limit is {_state['result_cap']} bytes")
    fd = _state["result_fd"]
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]
    os.close(fd)  # later writes to the channel fail instead of extending the result
    _state["emitted"] = True


_renames: list[tuple[str, str]] = []  # (host directory, where the jail shows it), longest first


def rename_frames(names: dict[str, str]) -> None:
    """Code loaded before the jail existed names host files; tracebacks name them as the jail has them."""
    _renames[:] = sorted(names.items(), key=lambda item: -len(item[0]))


def _jail_name(path: str) -> str:
    for host, jailed in _renames:
        if path == host or path.startswith(host + "/"):
            return jailed + path[len(host):]
    return path


def _print_job_traceback(exc: BaseException) -> None:
    # Start at the job's own frame: the runner's frame is noise for students.
    tb = exc.__traceback__.tb_next if exc.__traceback__ else None
    report = traceback.TracebackException(type(exc), exc, tb, lookup_lines=False)
    pending, seen = [report], set()
    while pending:  # the exception, its causes and contexts, the members of a group
        item = pending.pop()
        if id(item) not in seen:
            seen.add(id(item))
            for frame in item.stack:
                frame.filename = _jail_name(frame.filename)  # its line is then read from the jail's file
            pending += [x for x in (item.__cause__, item.__context__) if x is not None]
            pending += getattr(item, "exceptions", None) or []
    print("".join(report.format()), end="", file=sys.stderr)


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def run(source: str, input_json: str, result_fd: int, result_cap: int) -> int:
    """Execute `source` as `__main__`; return the process exit code."""
    _state.update(input_json=input_json, result_fd=result_fd, result_cap=result_cap, emitted=False)
    module = types.ModuleType("__main__")
    module.__file__ = JOB_FILENAME
    sys.modules["__main__"] = module
    sys.argv = [JOB_FILENAME]
    # Tracebacks and inspect.getsource() read the source from linecache; no file needed.
    linecache.cache[JOB_FILENAME] = (len(source), None, source.splitlines(True), JOB_FILENAME)
    code = 0
    try:
        exec(compile(source, JOB_FILENAME, "exec"), module.__dict__)  # noqa: S102 - running the job is the point
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException as exc:  # the job's failure is reported, not raised
        _print_job_traceback(exc)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed stream must not hide the exit code
            code = code or 1
    return code


def run_from_fd(fd: int) -> None:
    """Entry point of a freshly exec'd interpreter (benchmark baseline)."""
    with os.fdopen(fd, "rb") as stream:
        job = json.loads(stream.read())
    os._exit(run(job["source"], job["input_json"], job["result_fd"], job["result_cap"]))
