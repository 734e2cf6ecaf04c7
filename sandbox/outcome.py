"""Turn what the proxy observed about a finished job into a status and a message.

Kept pure so every branch is unit-tested without running a job. Only facts the
job cannot forge decide `timeout`, `memory` and `killed`: the proxy's own clock,
the cgroup OOM counter and the wait status the init reported. The traceback
text the job printed only shapes the *message* (and marks an allocation
failure as `memory`, which at worst lets a student mislabel their own error).
"""

from __future__ import annotations

import os
import re
import signal as signals
from dataclasses import dataclass

from sandbox.job_response import MAX_ERROR_CHARS
from sandbox.limits import Limits

JOB_FILENAME = "job.py"
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]*)", line (?P<line>\d+)')
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Warning|Interrupt|Exit)\b")
_ALLOCATION_FAILURES = ("MemoryError", "can't allocate memory", "std::bad_alloc", "Cannot allocate memory")


@dataclass(frozen=True)
class Observation:
    wait_status: int | None  # raw waitpid status of the student process, None if never reported
    cpu_seconds: float = 0.0
    timed_out: bool = False
    overflow: str | None = None  # "stdout", "stderr" or "result" when a cap was hit
    oom_killed: bool = False
    stderr: str = ""


@dataclass(frozen=True)
class Outcome:
    status: str
    exit_code: int | None
    signal: int | None
    error: str | None


def _size(nbytes: int) -> str:
    if nbytes % (1024 * 1024) == 0:
        return f"{nbytes // (1024 * 1024)} MiB"
    return f"{nbytes // 1024} KiB" if nbytes % 1024 == 0 else f"{nbytes} bytes"


def _signal_name(number: int) -> str:
    try:
        name = signals.Signals(number).name
    except ValueError:
        return f"signal {number}"
    description = signals.strsignal(number)
    return f"{name} ({description})" if description else name


def traceback_summary(stderr: str) -> str | None:
    """The exception line of the last traceback, with the job line that raised it.

    A SyntaxError has no "Traceback" header (the code never ran), so a final
    exception line after a `File` line is accepted too.
    """
    lines = stderr.rstrip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    tail = lines[starts[-1] + 1:] if starts else lines[-6:]
    frames = [m for m in map(_FRAME.match, tail) if m]
    exception = tail[-1] if tail and not tail[-1].startswith(" ") else None
    if exception is None or not (starts or (frames and _EXCEPTION.match(exception))):
        return None  # no traceback: perhaps an "Error: ..." line the program printed itself
    in_job = [m for m in frames if m.group("file") == JOB_FILENAME]
    where = (in_job or frames)[-1] if frames else None
    location = f" ({where.group('file')}, line {where.group('line')})" if where else ""
    return (exception + location)[:MAX_ERROR_CHARS]


def _from_exit(code: int, obs: Observation, limits: Limits) -> Outcome:
    if code == 0:
        return Outcome("ok", 0, None, None)
    summary = traceback_summary(obs.stderr)
    if summary and any(marker in summary for marker in _ALLOCATION_FAILURES):
        message = f"Memory limit of {limits.memory_mb} MiB exceeded: {summary}"
        return Outcome("memory", code, None, message[:MAX_ERROR_CHARS])
    return Outcome("error", code, None, summary or f"The program exited with code {code}")


def _from_signal(number: int, obs: Observation, limits: Limits) -> Outcome:
    cpu_exceeded = number == signals.SIGXCPU or (
        number == signals.SIGKILL and obs.cpu_seconds >= limits.cpu_seconds
    )
    if cpu_exceeded:
        return Outcome("timeout", None, number, f"CPU time limit of {limits.cpu_seconds:g} s exceeded")
    return Outcome("killed", None, number, f"The program was killed by {_signal_name(number)}")


def classify(obs: Observation, limits: Limits) -> Outcome:
    """Decide status and message; the first matching rule wins."""
    code, number = _split_status(obs.wait_status)
    if obs.oom_killed:  # first: a job that lost a process to the OOM killer often hangs next
        return Outcome("memory", code, number, f"Memory limit of {limits.memory_mb} MiB exceeded")
    if obs.timed_out:
        return Outcome("timeout", code, number, f"Time limit of {limits.wall_seconds:g} s exceeded")
    if obs.overflow == "result":
        return Outcome("killed", code, number, f"Result larger than {_size(limits.result_bytes)}")
    if obs.overflow:
        message = f"Output limit of {_size(limits.output_bytes)} exceeded on {obs.overflow}"
        return Outcome("killed", code, number, message)
    if number is not None:
        return _from_signal(number, obs, limits)
    if code is not None:
        return _from_exit(code, obs, limits)
    return Outcome("killed", None, None, "The program was killed before it reported an exit status")


def _split_status(status: int | None) -> tuple[int | None, int | None]:
    if status is None:
        return None, None
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status), None
    return None, None
