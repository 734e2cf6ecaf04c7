"""The CI-sized chaos drill: 100 students in 12 s over HTTP against a private stack
with its own redis-server; one worker SIGKILL and one Redis restart during the load. Asserts
0 lost and 0 doubled; the latency and recovery figures are printed, not asserted."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.integration


def test_a_worker_kill_and_a_redis_restart_under_load_lose_and_double_nothing() -> None:
    out = subprocess.run([sys.executable, "bench/chaos.py", "--students", "100", "--seconds", "12",
                          "--faults", "worker,redis"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={k: v for k, v in os.environ.items()
                              if k not in ("SANDBOX_SOCKET", "DATABASE_URL", "CELERY_QUEUE", "REDIS_URL")})
    print(out.stdout[-3000:])
    verdict = re.search(r"chaos verdict: (\d+) lost, (\d+) doubled", out.stdout)
    assert verdict, out.stdout[-2000:] + out.stderr[-3000:]
    assert (int(verdict.group(1)), int(verdict.group(2))) == (0, 0)
    accepted = re.search(r"100 students, (\d+) accepted, (\d+) errors, (\d+) graded", out.stdout)
    assert accepted and accepted.group(1) == accepted.group(3) == "100", out.stdout[-2000:]  # each one graded
    assert out.stdout.count("fault: ") == 2 and out.returncode == 0
