"""The worker lanes and their Celery queues: numeric/formula grading, code grading, maintenance
(the sweeper, authoring jobs, warming answer keys, regrades) and the LMS (scores sent to platforms,
roster syncs: calls to hosts the project does not run, which may be slow). Each lane has its own
queue and worker pool, so a slow LMS never delays a grade (grader/fairness.py decides which lane a
submission takes)."""

from __future__ import annotations

NUMERIC, CODE, MAINTENANCE, LMS = "numeric", "code", "maintenance", "lms"
LANES = (NUMERIC, CODE, MAINTENANCE, LMS)


def queue_name(*, lane: str) -> str:
    """The Celery queue of a lane, derived from the default queue (tests use one of their own)."""
    from config.celery_app import app

    base: str = app.conf.task_default_queue
    return base if lane == NUMERIC else f"{base}-{lane}"
