"""Blocking drill: an instructor previews an assignment whose reference program sleeps for a minute,
while students log in and submit elsewhere. Prints the p50/p95/max of the students' requests before
the preview (the floor) and while its reference runs.

    .venv/bin/python bench/blocking_drill.py                    # SQLite, 20 students, a 60 s reference
    .venv/bin/python bench/blocking_drill.py --postgres         # a private PostgreSQL cluster
    .venv/bin/python bench/blocking_drill.py --sleep 10 --students 5    # a quick look

A private stack (bench/stack.py): a fresh database, the sandbox server, a worker per lane and
gunicorn. Each student, in a loop until the preview is done: a new connection, a password login (GET
the form, POST it) and a numeric submission over the API, then a pause (--pause, 15 s: a password
login costs about 0.3–0.5 s of CPU, and 20 students logging in every few seconds saturate two cores by
themselves, blocked or not). The preview is the authoring page's own job, run by the maintenance
worker in the sandbox, as in production. Exit status 1 when a request failed or the p95 while the
reference runs is above both --target seconds and 1.5× the p95 without the preview.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import PASSWORD, Browser, Student, students_create
from stack import PrivatePostgres, Stack, setup_django

# The analysis runs a program more than once (its counterfactual graphs): it sleeps the first time only.
REFERENCE = """import sys, time
if not hasattr(sys, "slept"):
    sys.slept = True
    time.sleep({sleep})
x = torch.tensor(x0, requires_grad=True)
y = torch.tensor(y0, requires_grad=True)
z = 3 * x**2 + 2 * y
z.backward()
"""


def _percentiles(values: list[float]) -> str:
    if not values:
        return "no requests"
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return (f"p50 {at(0.5) * 1000:.0f} ms, p95 {at(0.95) * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms "
            f"(n={len(values)})")


class Requests:
    def __init__(self) -> None:
        self.logins: list[float] = []
        self.submits: list[float] = []
        self.failures: list[str] = []
        self.lock = threading.Lock()


def _student_loop(url: str, student: Student, until: threading.Event, into: Requests, pause: float) -> None:
    """Log in and submit, again and again, until `until` is set."""
    until.wait(random.uniform(0, pause))  # spread over the pause, not all at once
    while not until.is_set():
        browser = Browser(url)
        try:
            began = time.monotonic()
            browser.log_in(student, "password")  # the form's GET and its POST
            logged_in = time.monotonic()
            browser.submit("visual-walkthrough", {"answers": {"x.grad": "7"}})
            done = time.monotonic()
            with into.lock:
                into.logins.append(logged_in - began)
                into.submits.append(done - logged_in)
        except Exception as exc:
            with into.lock:
                into.failures.append(f"{type(exc).__name__}: {exc}")
        finally:
            browser.conn.close()
        until.wait(pause)


def _phase(url: str, students: list[Student], seconds: float | None, done: threading.Event | None,
           pause: float) -> Requests:
    """Every student in its loop for `seconds`, or until `done` is set."""
    into, stop = Requests(), threading.Event()
    threads = [threading.Thread(target=_student_loop, args=(url, s, stop, into, pause), daemon=True)
               for s in students]
    for thread in threads:
        thread.start()
    if done is not None:
        done.wait()
    else:
        time.sleep(seconds or 0)
    stop.set()
    for thread in threads:
        thread.join(timeout=90)
    return into


def _report(label: str, into: Requests) -> list[float]:
    both = into.logins + into.submits
    print(f"{label}:")
    print(f"  login (GET + POST)   {_percentiles(into.logins)}")
    print(f"  submission (POST)    {_percentiles(into.submits)}")
    print(f"  every request        {_percentiles(both)}; failed: {len(into.failures)}", flush=True)
    for failure in into.failures[:5]:
        print(f"    {failure}")
    return both


def _preview(stack: Stack, sleep: float) -> tuple[int, threading.Event, list[float]]:
    """Queue the preview as the authoring page does; an event set once its job is done."""
    from assignments.models import AuthoringJob
    from assignments.services import course_demo
    from authoring import publishing
    from authoring.forms import catalog_json
    from authoring.jobs import job_request
    from config.celery_app import app
    from grader.accounts import user_create

    app.conf.task_default_queue = stack.queue  # the stack's workers listen there
    instructor, _ = user_create(username=f"drill-instructor-{uuid.uuid4().hex[:6]}", role="instructor",
                                course=course_demo(), password=PASSWORD)
    slug = f"sleeping-{uuid.uuid4().hex[:6]}"
    data = {"slug": slug, "title": "Sleeping reference", "statement": "s", "reference": REFERENCE.format(sleep=0),
            "params": {"x0": 1.5, "y0": -0.5}, "parts": [{"key": "x.grad"}, {"key": "y.grad"}]}
    assignment = publishing.assignment_create(course=course_demo(), data=data)
    slow = {**data, "reference": REFERENCE.format(sleep=sleep)}
    job = job_request(kind=AuthoringJob.Kind.PREVIEW, course=course_demo(), user=instructor, assignment=assignment,
                      payload={"data": catalog_json(slow), "answers": {}, "code": {}})
    finished, took = threading.Event(), []

    def watch() -> None:
        began = time.monotonic()
        while AuthoringJob.objects.filter(pk=job.pk, status__in=("queued", "running")).exists():
            time.sleep(0.5)
        took.append(time.monotonic() - began)
        finished.set()

    threading.Thread(target=watch, daemon=True).start()
    return job.pk, finished, took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--sleep", type=float, default=60.0, help="seconds the reference program sleeps")
    parser.add_argument("--floor-seconds", type=float, default=10.0, help="the phase before the preview")
    parser.add_argument("--postgres", action="store_true", help="a private PostgreSQL cluster instead of SQLite")
    parser.add_argument("--target", type=float, default=1.0, help="p95 while the reference runs, seconds")
    parser.add_argument("--pause", type=float, default=15.0,
                        help="seconds each student waits between rounds (a password login costs ~0.3 s of CPU)")
    args = parser.parse_args(argv)
    # The reference may run past its sleep; the budget must let one minute's reference finish.
    os.environ["GRADER_REFERENCE_TIMEOUT"] = str(2 * args.sleep + 60)
    os.environ["GRADER_AUTHORING_BUDGET_SECONDS"] = "0"
    from django.core.management import call_command

    with tempfile.TemporaryDirectory(prefix="blocking-drill-") as tmp:
        workdir = Path(tmp)
        postgres = PrivatePostgres() if args.postgres else None
        if postgres:
            postgres.create()
        setup_django(workdir, database_url=postgres.url if postgres else None)
        call_command("migrate", verbosity=0)
        stack = Stack(workdir=workdir, redis=None, postgres=postgres)
        try:
            stack.start()
            call_command("load_assignments", verbosity=0)
            students = students_create(args.students, with_password=True)
            print(f"{'PostgreSQL' if postgres else 'SQLite'}: {args.students} students logging in and submitting "
                  f"in a loop; a preview whose reference sleeps {args.sleep:g} s", flush=True)
            floor = _report(f"floor ({args.floor_seconds:g} s, no preview)",
                            _phase(stack.url, students, args.floor_seconds, None, args.pause))
            job_id, finished, took = _preview(stack, args.sleep)
            during = _report("while the preview's reference runs",
                             _phase(stack.url, students, None, finished, args.pause))
            from assignments.models import AuthoringJob

            job = AuthoringJob.objects.get(pk=job_id)
            error = (job.result or {}).get("preview", {}).get("error") or (job.result or {}).get("error")
            print(f"preview job {job.status} after {took[0]:.1f} s{f' ({error})' if error else ''}; "
                  f"its sandbox time {job.sandbox_seconds:.1f} s", flush=True)
        finally:
            stack.close()
            if postgres:
                from django.db import connections

                connections.close_all()
                postgres.remove()
    p95, floor_p95 = _p95(during), _p95(floor)
    # "As usual": within the target, or no worse than the same requests without the preview (password
    # logins are CPU-bound: on a busy machine they are slow with or without it).
    bound = max(args.target, 1.5 * floor_p95)
    ok = bool(floor) and bool(during) and p95 <= bound and job.status == "done" and not error
    print(f"{'PASS' if ok else 'FAIL'}: p95 while it runs {p95 * 1000:.0f} ms, without the preview "
          f"{floor_p95 * 1000:.0f} ms (bound: {args.target * 1000:.0f} ms or 1.5× that)")
    return 0 if ok else 1


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] if ordered else float("inf")


if __name__ == "__main__":
    sys.exit(main())
