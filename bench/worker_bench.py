"""Worker throughput alone: N queued numeric submissions drained by real Celery worker processes.

Separates grading capacity from HTTP handling (bench/numeric_bench.py measures both together).
The worker grades as in production: one drain task per pool process, each claiming queued rows in
batches (grader/workflow/grade.py numeric_drain); `--per-row` sends one grade_submission task per row
instead, as the numeric lane did before the drains. Baseline, side by side: the same service called
in-process in one loop, so the ratio is the cost of the broker and the worker pool.

    .venv/bin/python bench/worker_bench.py            # 600 submissions, -c 2
    .venv/bin/python bench/worker_bench.py --per-row  # one task per submission
    .venv/bin/python bench/worker_bench.py -n 2000 -c 4
    .venv/bin/python bench/worker_bench.py --pool solo -c 1 --prefetch 4   # other pool shapes
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup(workdir: Path, queue: str) -> None:
    os.environ.update({"DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}", "CELERY_QUEUE": queue,
                       "DJANGO_SETTINGS_MODULE": "config.settings", "GRADER_RATE_LIMIT": "0",
                       "SANDBOX_SOCKET": str(workdir / "sandbox.sock")})
    os.environ.setdefault("SECRET_KEY", "bench-only-" + os.urandom(8).hex())  # no built-in key any more
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def queued_submissions(count: int) -> list[int]:
    """Rows created through the real service; their messages are held back until the clock starts."""
    from assignments.models import Assignment
    from assignments.services import course_demo
    from grader import workflow
    from grader.accounts import user_create
    from grader.workflow import submit

    held: list[int] = []
    submit.submission_enqueue = lambda submission_id, lane: held.append(submission_id)
    assignment = Assignment.objects.get(slug="visual-walkthrough")
    students = [user_create(username=f"bench-{n}", role="student", course=course_demo())[0] for n in range(20)]
    for n in range(count):
        answers = {"x.grad": "4" if n % 2 else "7", "y.grad": "2"}
        workflow.submission_create(student=students[n % 20], assignment=assignment, answers=answers, code={})
    return held


def drain(ids: list[int], queue: str, concurrency: int, pool: str = "prefork", prefetch: int = 1,
          per_row: bool = False) -> float:
    """Publish the messages, start the worker, and return graded/s from the database timestamps."""
    from grader.models import Submission
    from grader.tasks import grade_numeric, grade_submission

    if per_row:
        for submission_id in ids:
            grade_submission.delay(submission_id)
    else:  # what the web's wake-ups amount to under load: a drain for each process
        for _ in range(concurrency):
            grade_numeric.delay()
    command = [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queue, "-c", str(concurrency),
               "--pool", pool, "--prefetch-multiplier", str(prefetch), "--without-gossip", "--without-mingle",
               "--loglevel", "WARNING"]
    worker = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ), start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while Submission.objects.filter(id__in=ids, status="graded").count() < len(ids):
            if time.monotonic() > deadline:
                raise TimeoutError("the worker did not drain the queue in 300 s")
            time.sleep(0.2)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait()
    rows = Submission.objects.filter(id__in=ids).values_list("started_at", "graded_at")
    span = (max(g for _, g in rows) - min(s for s, _ in rows)).total_seconds()
    return len(ids) / span


def in_process(count: int, per_row: bool) -> float:
    from grader import workflow

    ids = queued_submissions(count)
    started = time.perf_counter()
    if per_row:
        for submission_id in ids:
            workflow.submission_grade(submission_id=submission_id)
    else:
        workflow.numeric_drain()
    return count / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=600)
    parser.add_argument("-c", "--concurrency", type=int, default=2)
    parser.add_argument("--pool", choices=("prefork", "threads", "solo"), default="prefork",
                        help="the worker pool (run.sh and compose run the numeric lane with prefork)")
    parser.add_argument("--prefetch", type=int, default=1, help="messages each pool process reserves ahead")
    parser.add_argument("--per-row", action="store_true", help="one grade_submission task per row, no drains")
    args = parser.parse_args()
    queue = f"worker-bench-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="worker-bench-") as tmp:
        setup(Path(tmp), queue)
        from django.conf import settings
        from django.core.management import call_command

        from sandbox.launch import spawn_server, stop_server

        server = spawn_server(settings.SANDBOX_SOCKET, preload=("chainrule.analysis",),
                              package_dirs=(str(ROOT / "chainrule"),), uid_base=62800)
        try:
            call_command("load_assignments", verbosity=0)
            rate = drain(queued_submissions(args.n), queue, args.concurrency, args.pool, args.prefetch,
                         args.per_row)
            baseline = in_process(min(args.n, 300), args.per_row)
        finally:
            stop_server(server)
    how = "a task per row" if args.per_row else "drains"
    print(f"worker pool ({args.pool}, -c {args.concurrency}, prefetch {args.prefetch}, {how}): {rate:7.1f} graded/s   "
          f"in-process service, one process: {baseline:7.1f} graded/s   ratio {rate / baseline:.2f}×")


if __name__ == "__main__":
    main()
