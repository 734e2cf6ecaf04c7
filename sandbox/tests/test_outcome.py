from __future__ import annotations

import os
import signal

from sandbox.limits import Limits
from sandbox.outcome import Observation, classify, traceback_summary

LIMITS = Limits(wall_seconds=5, cpu_seconds=3, memory_mb=512)


def _exited(code: int) -> int:
    return code << 8


def test_a_clean_exit_is_ok() -> None:
    outcome = classify(Observation(wait_status=_exited(0)), LIMITS)
    assert (outcome.status, outcome.exit_code, outcome.error) == ("ok", 0, None)


def test_the_wall_clock_wins_over_the_exit_status() -> None:
    outcome = classify(Observation(wait_status=signal.SIGKILL, timed_out=True), LIMITS)
    assert (outcome.status, outcome.error) == ("timeout", "Time limit of 5 s exceeded")


def test_an_oom_kill_is_memory_even_when_the_job_then_timed_out() -> None:
    outcome = classify(Observation(wait_status=None, timed_out=True, oom_killed=True), LIMITS)
    assert (outcome.status, outcome.error) == ("memory", "Memory limit of 512 MiB exceeded")


def test_sigxcpu_is_a_cpu_timeout() -> None:
    outcome = classify(Observation(wait_status=signal.SIGXCPU), LIMITS)
    assert (outcome.status, outcome.signal) == ("timeout", signal.SIGXCPU)
    assert outcome.error == "CPU time limit of 3 s exceeded"


def test_sigkill_after_the_cpu_budget_is_a_cpu_timeout() -> None:
    outcome = classify(Observation(wait_status=signal.SIGKILL, cpu_seconds=4.0), LIMITS)
    assert outcome.status == "timeout"


def test_a_crash_names_the_signal() -> None:
    outcome = classify(Observation(wait_status=signal.SIGSEGV), LIMITS)
    assert outcome.status == "killed"
    assert outcome.error == "The program was killed by SIGSEGV (Segmentation fault)"


def test_output_overflow_is_killed_with_the_stream_named() -> None:
    outcome = classify(Observation(wait_status=signal.SIGKILL, overflow="stderr"), Limits())
    assert (outcome.status, outcome.error) == ("killed", "Output limit of 1 MiB exceeded on stderr")


def test_an_allocation_failure_is_memory() -> None:
    stderr = ('Traceback (most recent call last):\n  File "job.py", line 2, in <module>\n'
              "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 5 bytes\n")
    outcome = classify(Observation(wait_status=_exited(1), stderr=stderr), LIMITS)
    assert outcome.status == "memory"
    assert outcome.error is not None and outcome.error.startswith("Memory limit of 512 MiB exceeded: RuntimeError")


def test_an_exit_code_without_traceback() -> None:
    outcome = classify(Observation(wait_status=_exited(3), stderr="Error: not a traceback\n"), LIMITS)
    assert (outcome.status, outcome.error) == ("error", "The program exited with code 3")


def test_the_summary_prefers_the_job_frame() -> None:
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "job.py", line 7, in <module>\n    f()\n'
        '  File "/venv/torch/x.py", line 99, in f\n    raise ValueError("bad")\n'
        "ValueError: bad\n"
    )
    assert traceback_summary(stderr) == "ValueError: bad (job.py, line 7)"


def test_the_summary_handles_custom_exceptions_and_syntax_errors() -> None:
    custom = 'Traceback (most recent call last):\n  File "job.py", line 1, in <module>\nOops: no\n'
    syntax = '  File "job.py", line 1\n    def f(:\n         ^\nSyntaxError: invalid syntax\n'
    assert traceback_summary(custom) == "Oops: no (job.py, line 1)"
    assert traceback_summary(syntax) == "SyntaxError: invalid syntax (job.py, line 1)"


def test_a_never_reported_status_is_killed() -> None:
    assert classify(Observation(wait_status=None), LIMITS).status == "killed"
    assert os.WIFEXITED(_exited(0))
