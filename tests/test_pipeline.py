"""The grading pipeline against a real Redis and real Celery worker processes.

Nothing is lost and nothing is graded twice: duplicate deliveries, a lost broker
message, a worker killed mid-grade and a Redis restart.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest

from assignments.models import Assignment
from assignments.services import course_demo
from catalog.spec import spec_from_data
from catalog.upsert import assignment_upsert
from conftest import Person, free_port, start_worker, stop_process
from grader.models import Result, Submission
from grader.tasks import grade_submission
from grader.workflow import submission_create, submissions_sweep
from tests.drills import PrivateRedis, at_once, broker, wait_graded

pytestmark = pytest.mark.integration


def submit(person: Person, slug: str, **answers: str) -> Submission:
    return submission_create(
        student=person.user, assignment=Assignment.objects.get(slug=slug), answers=answers, code={}
    )


def test_a_worker_grades_a_submission_with_path_feedback(live_db: None, worker: Any, student: Person) -> None:
    submission = submit(student, "visual-walkthrough", **{"x.grad": "4", "y.grad": "2"})
    [graded] = wait_graded([submission.id])
    assert graded.status == "graded" and graded.attempt == 1
    parts = {p["part"]: p for p in graded.result.document["parts"]}
    assert parts["x.grad"]["diagnosis"]["kind"] == "missing_path"
    assert ["x", "mul", "add", "z"] in parts["x.grad"]["diagnosis"]["paths"]
    assert graded.result.score == 1.0 and graded.result.max_score == 5.0  # + formula and code parts


def test_a_task_delivered_three_times_grades_once(live_db: None, worker: Any, student: Person) -> None:
    submission = submit(student, "positive-gradient", **{"x.grad": "7"})
    for _ in range(2):
        grade_submission.delay(submission.id)
    [graded] = wait_graded([submission.id])
    first_result = Result.objects.get(submission=submission)
    grade_submission.delay(submission.id)
    time.sleep(1.0)
    assert Result.objects.filter(submission=submission).count() == 1
    assert Result.objects.get(submission=submission).created_at == first_result.created_at
    assert graded.result.score == 1.0


def test_a_burst_of_numeric_answers_is_graded_once_each(live_db: None, worker: Any, student: Person) -> None:
    """Thirty answers faster than one worker grades them: drains take them in batches, none twice or lost."""
    from grader.metrics import metrics_text

    def counted() -> float:
        [line] = [line for line in metrics_text().splitlines()
                  if line.startswith('grader_latency_seconds_count{lane="numeric"}')]
        return float(line.split()[-1])

    before = counted()
    values = [str(v) for v in range(3, 9)] * 5  # x.grad of positive-gradient is 7: one in six right
    sent = [submit(student, "positive-gradient", **{"x.grad": value}) for value in values]
    graded = wait_graded([s.id for s in sent])
    time.sleep(0.5)  # the metric goes to Redis just after the results commit
    assert counted() >= before + len(sent)  # each counted in the latency histogram of /metrics
    assert [g.result.score for g in sorted(graded, key=lambda g: g.id)] == [float(v == "7") for v in values]
    assert Result.objects.filter(submission__in=sent).count() == len(sent)
    assert {g.deliveries for g in graded} == {1}  # each claimed once


def test_two_drains_at_once_take_disjoint_rows(live_db: None, student: Person, monkeypatch: Any) -> None:
    """Two worker processes draining the same backlog (SKIP LOCKED on PostgreSQL, the status check on
    SQLite): every row graded by exactly one of them, none claimed twice."""
    import threading

    from grader import workflow

    # Only these two drains grade: no others are sent.
    monkeypatch.setattr("grader.workflow.queueing.enqueue_once", lambda *args, **kwargs: True)
    sent = [submit(student, "positive-gradient", **{"x.grad": str(3 + n % 6)}) for n in range(40)]
    start, graded_by = threading.Barrier(2), []

    def drain() -> None:
        start.wait()
        graded_by.append(workflow.numeric_drain())

    at_once(drain, 2)
    assert sum(graded_by) == len(sent)
    rows = Submission.objects.filter(id__in=[s.id for s in sent])
    assert {(row.status, row.deliveries) for row in rows} == {("graded", 1)}
    assert Result.objects.filter(submission__in=sent).count() == len(sent)


def test_a_lost_broker_message_is_picked_up_by_the_sweeper(live_db: None, worker: Any, student: Person) -> None:
    assignment = Assignment.objects.get(slug="detach")
    submission = Submission.objects.create(  # as if the enqueue after commit never reached Redis
        student=student.user, assignment=assignment, answers={"x.grad": "12"}, attempt=1,
        variant=submit(student, "detach", **{"x.grad": "4"}).variant,
    )
    Submission.objects.filter(id=submission.id).update(enqueued_at=None)
    assert submission.id in submissions_sweep(queued_after=timedelta(0), running_after=timedelta(hours=1))
    [graded] = wait_graded([submission.id])
    assert graded.result.document["parts"][0]["diagnosis"]["kind"] == "extra_path"


def _slow_assignment() -> Assignment:
    data = {
        "slug": f"slow-reference-{uuid.uuid4().hex[:8]}", "title": "Slow", "statement": "slow",
        "reference": "import time\ntime.sleep(slow)\nx = torch.tensor(2.0, requires_grad=True)\n"
                     "z = x**3\nz.backward()\n",
        "params": {"slow": 3.0},
        "parts": [{"key": "x.grad", "kind": "numeric"}],
    }
    assignment, _ = assignment_upsert(spec=spec_from_data(data, path="slow.toml"), course=course_demo())
    return assignment


def test_a_worker_killed_mid_grade_loses_nothing_and_grades_once(
    live_db: None, grading_queue: str, student: Person
) -> None:
    queue = f"{grading_queue}-kill"
    assignment = _slow_assignment()
    victim = start_worker(queue, "worker-killed.log")
    try:
        with _queue(queue):
            submission = submission_create(student=student.user, assignment=assignment,
                                           answers={"x.grad": "12"}, code={})
        _wait_status(submission.id, "running")
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
    finally:
        stop_process(victim)
    rescuer = start_worker(queue, "worker-rescuer.log")
    try:
        with _queue(queue):
            assert submission.id in submissions_sweep(queued_after=timedelta(hours=1), running_after=timedelta(0))
        [graded] = wait_graded([submission.id], timeout=90)
    finally:
        stop_process(rescuer)
    assert graded.status == "graded" and graded.attempt == 1
    assert graded.result.score == 1.0
    assert Submission.objects.filter(student=student.user, assignment=assignment).count() == 1


def test_a_redis_restart_loses_no_submission(live_db: None, grading_queue: str, student: Person) -> None:
    redis = PrivateRedis(free_port())
    redis.start()
    queue = f"{grading_queue}-redis"
    try:
        with broker(redis.url), _queue(queue):
            before = [submit(student, "accumulation", **{"x.grad": str(v)}) for v in (8, 4)]
            redis.kill()  # queued messages vanish with it (no persistence)
            during = submit(student, "accumulation", **{"x.grad": "16"})  # enqueue fails: row stays queued
            redis.start()
            worker = start_worker(queue, "worker-redis.log", REDIS_URL=redis.url,
                                  CELERY_BROKER_URL=redis.url)
            try:
                _sweep_by_command(redis.url)
                graded = wait_graded([s.id for s in [*before, during]], timeout=90)
            finally:
                stop_process(worker)
    finally:
        redis.kill()
    assert [s.status for s in graded] == ["graded"] * 3
    assert sorted(s.attempt or 0 for s in graded) == [1, 2, 3]
    assert Result.objects.filter(submission__in=graded).count() == 3


def _sweep_by_command(redis_url: str) -> None:
    from conftest import ROOT, service_env

    out = subprocess.run(
        [sys.executable, "manage.py", "sweep_submissions", "--queued-after", "0"],
        cwd=ROOT, env=service_env(REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url,
                                  CELERY_QUEUE=os.environ.get("DRILL_QUEUE", "")),
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "re-enqueued" in out.stdout


class _queue:
    """Route this process's tasks to another queue for the duration."""

    def __init__(self, name: str) -> None:
        from config.celery_app import app

        self.app, self.name, self.old = app, name, app.conf.task_default_queue

    def __enter__(self) -> None:
        self.app.conf.task_default_queue = self.name
        os.environ["DRILL_QUEUE"] = self.name

    def __exit__(self, *exc: object) -> None:
        self.app.conf.task_default_queue = self.old
        os.environ.pop("DRILL_QUEUE", None)


def _wait_status(submission_id: int, status: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if Submission.objects.filter(id=submission_id, status=status).exists():
            return
        time.sleep(0.05)
    raise AssertionError(f"submission {submission_id} never reached {status}")


def test_hostile_code_is_contained_and_the_worker_keeps_grading(
    live_db: None, worker: Any, student: Person
) -> None:
    assignment = Assignment.objects.get(slug="visual-walkthrough")
    hostile = {
        "fork bomb": "import os\nwhile True:\n    os.fork()\n",
        "memory": "def grad_z(x, y):\n    blob = bytearray(50 * 1024**3)\n    return 1, 1\n",
        "kill the parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
        "os._exit": "import os\nos._exit(0)\n",
    }
    ids = [
        submission_create(student=student.user, assignment=assignment, answers={}, code={"grad_z": source}).id
        for source in hostile.values()
    ]
    try:
        graded = wait_graded(ids, timeout=60)
    except AssertionError:
        print("DEBUG", list(Submission.objects.filter(id__in=ids).values("id", "status", "error_reason", "variant_id")))
        raise
    assert [s.status for s in graded] == ["graded"] * len(hostile)
    for submission in graded:
        part = next(p for p in submission.result.document["parts"] if p["part"] == "grad_z")
        assert part["correct"] is False and part["diagnosis"]["kind"] == "code_error", part
    assert worker.poll() is None
    fine = submission_create(student=student.user, assignment=assignment, answers={},
                             code={"grad_z": "def grad_z(x, y):\n    return y + 2*x, x\n"})
    [after] = wait_graded([fine.id])
    assert after.result.score == 2.0
