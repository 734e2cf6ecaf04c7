"""Chaos drill (issue 9 item 6): during a load run, SIGKILL a worker, restart Redis (a PRIVATE
redis-server the drill started, never the machine's), kill and restart the sandbox server;
then check from the database that nothing was lost or doubled, and report each recovery
time: from the fault until the first submission made after it is graded.

    .venv/bin/python bench/chaos.py                           # 1000 students in 60 s, every fault
    .venv/bin/python bench/chaos.py --students 100 --seconds 20 --faults worker,redis   # the CI size

PostgreSQL is not stopped: the drill's database is a private SQLite file (stopping the
machine's PostgreSQL is never done). Exit status 1 when anything was lost or doubled.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import parser, private_run  # noqa: E402
from stack import Stack, wait_until  # noqa: E402

RECOVERIES: list[tuple[str, float, float]] = []  # fault, seconds down, seconds until graded again


def _graded_since(moment: datetime, lane: str) -> bool:
    from grader.models import Submission

    return Submission.objects.filter(graded_at__gt=moment, lane=lane, status="graded").exists()


def _fault(name: str, lane: str, break_it: Callable[[], object], mend: Callable[[], object]) -> None:
    """Recovery: from the fault until a submission of `lane` is graded after the component is back."""
    from django.utils import timezone

    began = time.monotonic()
    break_it()
    mend()
    moment = timezone.now()
    down = time.monotonic() - began
    try:
        recovery = wait_until(lambda: _graded_since(moment, lane), f"recovery after {name}", timeout=120)
    except RuntimeError:
        recovery = float("inf")
    RECOVERIES.append((name, down, recovery + down))
    print(f"  fault: {name}: down {down:.1f} s, graded again {recovery + down:.1f} s after the fault", flush=True)


def _restart_after(start: Callable[[], None], seconds: float) -> Callable[[], None]:
    def restart() -> None:
        time.sleep(seconds)
        start()
    return restart


def chaos(faults: list[str]) -> Callable[[Stack, float], None]:
    def during(stack: Stack, seconds: float) -> None:
        gap = max(seconds, 4.0) / (len(faults) + 1)
        for name in faults:
            time.sleep(gap)
            if name == "worker":
                _fault("SIGKILL the numeric worker (restarted as a supervisor would)", "numeric",
                       lambda: stack.kill_worker("numeric"), lambda: stack.start_worker("numeric"))
            elif name == "redis":
                assert stack.redis is not None, "the chaos drill restarts only a private Redis"
                _fault("restart the private Redis (queued messages lost)", "numeric",
                       stack.redis.kill, _restart_after(stack.redis.start, 1.0))
            elif name == "sandbox":
                _fault("kill and restart the sandbox server", "code", stack.kill_sandbox, stack.start_sandbox)
    return during


def main(argv: list[str] | None = None) -> int:
    p = parser()
    p.add_argument("--faults", default="worker,redis,sandbox", help="comma-separated: worker, redis, sandbox")
    args = p.parse_args(argv)
    args.private_redis = True
    faults = [f for f in args.faults.split(",") if f]
    print(f"chaos drill: {args.students} students in {args.seconds:g} s; faults: {', '.join(faults)}; "
          "PostgreSQL: not stopped (the drill's database is private SQLite)", flush=True)
    [verdict] = private_run(args, during=chaos(faults))
    print(f"\nchaos verdict: {verdict.lost} lost, {verdict.doubled} doubled, {verdict.errored} infrastructure errors, "
          f"{verdict.redelivered} redelivered and graded once")
    for name, down, recovery in RECOVERIES:
        print(f"  recovery: {name}: {recovery:.1f} s (down {down:.1f} s)")
    return 1 if verdict.lost or verdict.doubled else 0


if __name__ == "__main__":
    sys.exit(main())
