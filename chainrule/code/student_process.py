"""Inside the sandbox job: run the student's code in a forked child, read back only its records.

The harness process (the job itself) never runs student code. It keeps the sandbox's
result channel (fd 3) and is not dumpable, so `/proc/<pid>/fd` and its memory are
closed to the child; the child closes fd 3 and makes `sandbox_guest.emit` refuse
before any student code runs, in a process group of its own that is killed once it
has been reaped. The child sends one thing back: per point, the values its code
produced (or why they could not be read), and the text it printed. Student code may
write into that pipe itself, but a record it writes is a value its code produced, no
more: the harness process composes everything else of the part's report itself (ok,
the error, the number and order of points, CPU-limit and crash messages), and a
stream that is not exactly the expected records is discarded whole.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
from collections.abc import Callable
from typing import Any

RESULT_FD = 3  # the sandbox's result channel (sandbox.confine.RESULT_FD)
MAX_RECORD_BYTES = 1024 * 1024
# "trace": what the program did with autograd (chainrule.answers.trace_report checks it)
POINT_KEYS = frozenset({"values", "error", "unread", "raised", "trace"})
_PR_SET_DUMPABLE = 4
UNREADABLE = ("The grader could not read your code's results: it ended the grading process (os._exit(), a signal "
              "or a crash) or wrote into the grader's own channel. Let it finish normally.")


def records_in_child(work: Callable[[], dict[str, Any]], point_count: int) -> dict[str, Any] | str:
    """`work()` in a forked child: its `{"points": [...], "stdout": str}`, or the message for the
    student when the child's stream is not exactly that (crash, os._exit, CPU limit, forgery)."""
    import ctypes  # only inside the job

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        _child(work, write)
    os.close(write)
    payload, overflow, status, usage = _read_until_exit(read, child)
    with contextlib.suppress(OSError):
        os.killpg(child, signal.SIGKILL)  # whatever the student's code left running
    records = None if overflow else _records(payload, point_count)
    if records is None:
        return cpu_limit_message(status, usage) or UNREADABLE
    return records


def _child(work: Callable[[], dict[str, Any]], write: int) -> None:
    """Never returns: the student's code runs here, without the result channel."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    with contextlib.suppress(OSError):
        os.close(RESULT_FD)
    modules = __import__("sys").modules
    guest = modules.get("sandbox_guest")
    if guest is not None:
        guest._state.update(result_fd=-1, emitted=True)
    torch = modules.get("torch")  # None where imports of torch are refused (by-hand parts)
    if hasattr(torch, "set_num_threads"):  # OpenMP's pool does not survive fork(): a parallel op in the child
        torch.set_num_threads(1)  # of a parent that used it waited for ever (torch.zeros(100_000))
    try:
        payload = json.dumps(work()).encode()
    except BaseException:  # an unserialisable record is a failed run
        payload = b""
    view = memoryview(payload)
    with contextlib.suppress(OSError):
        while view:
            view = view[os.write(write, view):]
    os._exit(0)


def _read_until_exit(fd: int, child: int) -> tuple[bytes, bool, int, Any]:
    """What the child wrote until it exited (a process it left behind may hold the pipe open: what
    that writes later is not waited for), whether it wrote too much, and its wait status and usage."""
    os.set_blocking(fd, False)
    chunks: list[bytes] = []
    size, ended = 0, None
    while size <= MAX_RECORD_BYTES:
        readable, _, _ = select.select([fd], [], [], 0.05)
        chunk = _read_some(fd) if readable else None
        if chunk:
            chunks.append(chunk)
            size += len(chunk)
            continue
        if chunk == b"":  # every writer is gone
            break
        if ended is None:
            pid, status, usage = os.wait4(child, os.WNOHANG)
            ended = (status, usage) if pid else None
        if ended is not None and not readable:
            break
    os.close(fd)
    if size > MAX_RECORD_BYTES:
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)
    if ended is None:
        _, status, usage = os.wait4(child, 0)
        ended = (status, usage)
    return b"".join(chunks), size > MAX_RECORD_BYTES, ended[0], ended[1]


def _read_some(fd: int) -> bytes | None:
    try:
        return os.read(fd, 1 << 16)
    except BlockingIOError:
        return None


def _records(payload: bytes, point_count: int) -> dict[str, Any] | None:
    """Exactly one record per point and the printed text; None for anything else."""
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or set(data) != {"points", "stdout"} or not isinstance(data["stdout"], str):
        return None
    points = data["points"]
    if not isinstance(points, list) or len(points) != point_count:
        return None
    if not all(isinstance(point, dict) and "error" in point and set(point) <= POINT_KEYS for point in points):
        return None
    return data


def cpu_limit_message(status: int, usage: Any) -> str | None:
    """The child inherits the job's CPU rlimit with a fresh counter: killed by it (SIGXCPU, then SIGKILL
    at the hard limit), the student's code ran too long, which is what the student must be told."""
    soft, _ = resource.getrlimit(resource.RLIMIT_CPU)
    if not os.WIFSIGNALED(status) or soft == resource.RLIM_INFINITY:
        return None
    spent = usage.ru_utime + usage.ru_stime
    if os.WTERMSIG(status) == signal.SIGXCPU or (os.WTERMSIG(status) == signal.SIGKILL and spent >= soft - 0.05):
        return (f"CPU time limit of {soft:g} s exceeded: your code kept running (an endless loop, or printing a "
                "great deal?).")
    return None
