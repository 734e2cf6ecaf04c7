"""Chaos drill: during a load run, SIGKILL a worker, restart Redis (a PRIVATE
redis-server the drill started, never the machine's), kill and restart the sandbox server;
then check from the database that nothing was lost or doubled, and report each recovery
time: from the fault until a probe answer submitted right after it is graded.

    .venv/bin/python bench/chaos.py                           # 1000 students in 60 s, every fault
    .venv/bin/python bench/chaos.py --students 100 --seconds 12 --faults worker,redis   # the CI size
    .venv/bin/python bench/chaos.py --postgres               # on PostgreSQL, and stop it briefly too

The drill's database is a private SQLite file, or with --postgres a PostgreSQL cluster of its own
(initdb in its work directory, a free port): that one is stopped for two seconds and started again.
The machine's PostgreSQL is never touched. Exit status 1 when anything was lost or doubled.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import Browser, Student, parser, private_run, students_create
from stack import Stack, wait_until

RECOVERIES: list[tuple[str, float, float]] = []  # fault, seconds down, seconds until graded again


PROBES = {"numeric": ("positive-gradient", {"answers": {"x.grad": "7"}}),
          "code": ("negative-gradient", {"code": {"grad_z": "def grad_z(x):\n    return 4 - 3*x**2\n"}})}


def _probe_graded(url: str, probe: Student, lane: str) -> float:
    """Submit one probe answer of `lane` and wait until the database says graded: seconds taken.
    Its id is not part of the load's count (the probe student is not a load student)."""
    from grader.models import Submission

    browser = Browser(url)
    browser.log_in(probe, "token")
    began = time.monotonic()
    while True:  # the web server may refuse while a dependency is down; the probe retries
        try:
            submission_id = browser.submit(*PROBES[lane])
            break
        except Exception:
            if time.monotonic() - began > 120:
                return float("inf")
            time.sleep(0.2)
            browser = Browser(url)
            browser.log_in(probe, "token")
    try:
        wait_until(lambda: Submission.objects.filter(id=submission_id, status="graded").exists(),
                   f"probe {submission_id}", timeout=180)
    except RuntimeError:
        return float("inf")
    return time.monotonic() - began


def _fault(stack: Stack, probe: Student, name: str, lane: str, break_it: Callable[[], object],
           mend: Callable[[], object]) -> None:
    """Recovery: from the fault until a probe submitted right after it is graded."""
    began = time.monotonic()
    break_it()
    mend()
    down = time.monotonic() - began
    recovery = down + _probe_graded(stack.url, probe, lane)
    RECOVERIES.append((name, down, recovery))
    print(f"  fault: {name}: down {down:.1f} s, a probe made then was graded {recovery:.1f} s after the fault",
          flush=True)


def _restart_after(start: Callable[[], None], seconds: float) -> Callable[[], None]:
    def restart() -> None:
        time.sleep(seconds)
        start()
    return restart


def chaos(faults: list[str]) -> Callable[[Stack, float], None]:
    def during(stack: Stack, seconds: float) -> None:
        [probe] = students_create(1, with_password=False)
        gap = max(seconds, 4.0) / (len(faults) + 1)
        start = time.monotonic()
        threads = []
        for n, name in enumerate(faults, start=1):  # on a fixed schedule: a slow recovery delays no fault
            time.sleep(max(0.0, start + n * gap - time.monotonic()))
            if name == "worker":
                args: tuple[Any, ...] = ("SIGKILL the numeric worker (the drill's supervisor restarts it)", "numeric",
                                         lambda: stack.kill_worker("numeric"), lambda: None)
            elif name == "postgres":
                assert stack.postgres is not None, "the chaos drill stops only a private PostgreSQL (--postgres)"
                args = ("stop the private PostgreSQL for 2 s (connections cut)", "numeric", stack.postgres.stop,
                        _restart_after(stack.postgres.start, 2.0))
            elif name == "redis":
                assert stack.redis is not None, "the chaos drill restarts only a private Redis"
                args = ("restart the private Redis (queued messages lost)", "numeric", stack.redis.kill,
                        _restart_after(stack.redis.start, 1.0))
            else:
                args = ("kill and restart the sandbox server", "code", stack.kill_sandbox, stack.start_sandbox)
            thread = threading.Thread(target=_fault, args=(stack, probe, *args))
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join()
    return during


def main(argv: list[str] | None = None) -> int:
    p = parser()
    p.add_argument("--faults", help="comma-separated: worker, redis, sandbox, postgres (default: all that apply)")
    p.add_argument("--postgres", action="store_true", help="a private PostgreSQL cluster instead of SQLite")
    args = p.parse_args(argv)
    args.private_redis, args.private_postgres = True, args.postgres
    faults = [f for f in (args.faults or "worker,redis,sandbox" + (",postgres" if args.postgres else "")).split(",")
              if f]
    if "postgres" in faults and not args.postgres:
        p.error("the postgres fault needs --postgres (a private cluster; the machine's is never stopped)")
    database = "a private PostgreSQL cluster" if args.postgres else "private SQLite (PostgreSQL: --postgres)"
    print(f"chaos drill: {args.students} students in {args.seconds:g} s; faults: {', '.join(faults)}; "
          f"database: {database}", flush=True)
    [verdict] = private_run(args, during=chaos(faults))
    print(f"\nchaos verdict: {verdict.lost} lost, {verdict.doubled} doubled, {verdict.errored} infrastructure errors, "
          f"{verdict.redelivered} redelivered and graded once")
    for name, down, recovery in RECOVERIES:
        print(f"  recovery: {name}: {recovery:.1f} s (down {down:.1f} s)")
    return 1 if verdict.lost or verdict.doubled else 0


if __name__ == "__main__":
    sys.exit(main())
