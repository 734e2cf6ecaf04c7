"""Celery tasks: load ids, call one service."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from grader.services import submission_grade, submissions_sweep, sweep_defaults


@shared_task(
    name="grader.grade_submission",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=settings.GRADER_TASK_TIME_LIMIT - 10,
    time_limit=settings.GRADER_TASK_TIME_LIMIT,
)
def grade_submission(submission_id: int) -> None:
    submission_grade(submission_id=submission_id)


@shared_task(name="grader.sweep_submissions", time_limit=60)
def sweep_submissions() -> int:
    return len(submissions_sweep(**sweep_defaults()))
