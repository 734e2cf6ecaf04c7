"""Celery tasks: load ids, call one service."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.db import DatabaseError

from config.structured_logging import submission_context
from grader.bench_floor import bench_noop_finish
from grader.workflow import numeric_drain, submission_grade, submissions_sweep, sweep_defaults
from grading.answer_key import variant_warm

# Grading tasks: acknowledged once done, so a worker killed mid-grade has its message delivered again.
GRADING = {"acks_late": True, "reject_on_worker_lost": True, "soft_time_limit": settings.GRADER_TASK_TIME_LIMIT - 10,
           "time_limit": settings.GRADER_TASK_TIME_LIMIT}


@shared_task(name="grader.grade_submission", **GRADING)
def grade_submission(submission_id: int) -> None:
    """Routed per call to the lane's queue (grader/fairness.py); every line it logs names the submission."""
    with submission_context(submission_id):
        submission_grade(submission_id=submission_id)


@shared_task(name="grader.grade_numeric", autoretry_for=(DatabaseError,), retry_backoff=1, retry_backoff_max=30,
             max_retries=8, **GRADING)
def grade_numeric() -> int:
    """On the numeric lane's queue: grades queued numeric submissions in batches until none is left
    (grader/workflow/grade.py numeric_drain); each line it logs for a row names that submission. The
    database away (a restart): tried again after 1, 2, 4 … 30 s, since no new submission may come
    to send the next drain (the sweeper would, after GRADER_SWEEP_QUEUED_AFTER)."""
    return numeric_drain()


@shared_task(name="grader.sweep_submissions", time_limit=60)
def sweep_submissions() -> int:
    """On the maintenance queue (CELERY_TASK_ROUTES), so no grading backlog delays it."""
    return len(submissions_sweep(**sweep_defaults()))


@shared_task(name="grader.warm_variant", acks_late=True, soft_time_limit=50, time_limit=60)
def warm_variant(assignment_id: int, student_id: int) -> None:
    """Sent to the maintenance queue (grading/answer_key.py): a student's variant for the answer key."""
    variant_warm(assignment_id=assignment_id, student_id=student_id)


@shared_task(name="grader.bench_noop", acks_late=True)
def bench_noop(submission_id: int) -> None:
    """The benchmarks' floor: the same broker hop and one database write, no grading. Touches only
    rows the bench created for it (status error, reason BENCH_NOOP), never a real submission."""
    bench_noop_finish(submission_id=submission_id)
