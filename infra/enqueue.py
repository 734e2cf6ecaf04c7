"""Sending work to a worker lane: the one way the application enqueues a Celery task.

Every caller names the task (its registered name, so no module imports the tasks it sends), the
lane, and what happens if the broker cannot be reached — `if_lost`, logged with the exception. An
enqueue never raises: the work is stored in the database before it is sent, and something else
picks it up when a message is lost (the sweeper for submissions, the job page for authoring, the
instructor's retry for LMS scores). Callers that must say so to a user look at the returned bool.

With a Redis broker, a task without a countdown goes out as one LPUSH of the message `apply_async`
would send (infra/fast_publish.py, behind GRADER_FAST_PUBLISH; docs/decisions/0001-fast-publish.md).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from infra import fast_publish
from infra.lanes import queue_name

log = logging.getLogger(__name__)


def _app() -> Any:
    from config.celery_app import app  # the Celery app imports every tasks module: never at import time

    return app


def _task(name: str) -> Any | None:
    """The registered task, for the fast path; None when this process does not know it (then it is
    sent by name, which needs no import)."""
    app = _app()
    task = app.tasks.get(name)
    if task is None:
        app.loader.import_default_modules()  # the Django apps' tasks modules
        task = app.tasks.get(name)
    return task


def _fast(countdown: float | None) -> bool:
    return bool(settings.GRADER_FAST_PUBLISH) and countdown is None


def enqueue(task: str, *args: Any, lane: str, if_lost: str, countdown: float | None = None) -> bool:
    """Send `task(*args)` to `lane`'s queue, after `countdown` seconds if given. Whether it was sent;
    when not, logs `if_lost` (what happens to the work instead) with the broker's error."""
    queue = queue_name(lane=lane)
    try:
        found = _task(task) if _fast(countdown) else None
        if found is not None:
            fast_publish.task_publish(found, args=list(args), queue=queue)
        else:
            _app().send_task(task, args=list(args), queue=queue, countdown=countdown)
        return True
    except Exception:
        log.exception("could not enqueue %s%s; %s", task, tuple(args), if_lost)
        return False


def enqueue_once(task: str, *, lane: str, flag: str, ttl_s: int, if_lost: str) -> bool:
    """Send `task()` unless `flag` says one already waits, and set the flag for `ttl_s` seconds (one
    Redis round trip on the fast path). The task calls `flag_clear(flag)` when it starts. Whether the
    broker was reached."""
    queue = queue_name(lane=lane)
    try:
        found = _task(task) if _fast(None) else None
        if found is not None:
            fast_publish.task_publish_once(found, args=[], queue=queue, flag=flag, ttl_s=ttl_s)
        else:
            _app().send_task(task, args=[], queue=queue)
        return True
    except Exception:
        log.exception("could not enqueue %s; %s", task, if_lost)
        return False


def flag_clear(flag: str) -> None:
    """Clear an `enqueue_once` flag; without Redis it expires by itself."""
    try:
        if settings.GRADER_FAST_PUBLISH:
            fast_publish.flag_clear(_app(), flag)
    except Exception:
        log.warning("could not clear the flag %s; it expires by itself", flag, exc_info=True)
