"""The worker lanes and their Celery queues: numeric/formula grading, code grading, and
maintenance (the sweeper, authoring jobs, warming answer keys). Each lane has its own queue and
worker pool (grader/fairness.py decides which lane a submission takes)."""

from __future__ import annotations

NUMERIC, CODE, MAINTENANCE = "numeric", "code", "maintenance"


def queue_name(*, lane: str) -> str:
    """The Celery queue of a lane, derived from the default queue (tests use one of their own)."""
    from config.celery_app import app

    base: str = app.conf.task_default_queue
    return base if lane == NUMERIC else f"{base}-{lane}"
