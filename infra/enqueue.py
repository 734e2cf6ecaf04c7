"""Sending work to a worker lane: the one way the application enqueues a Celery task.

Every caller names the task (its registered name, so no module imports the tasks it sends), the
lane, and what happens if the broker cannot be reached — `if_lost`, logged with the exception. An
enqueue never raises: the work is stored in the database before it is sent, and something else
picks it up when a message is lost (the sweeper for submissions, the job page for authoring, the
instructor's retry for LMS scores). Callers that must say so to a user look at the returned bool.

Messages go through Celery's own `send_task`. A hand-built one-LPUSH message was measured against it
and removed: docs/decisions/0001-fast-publish.md.
"""

from __future__ import annotations

import logging
from typing import Any

from infra.lanes import queue_name
from infra.redis_client import PUBLISH, redis_client

log = logging.getLogger(__name__)


def enqueue(task: str, *args: Any, lane: str, if_lost: str, countdown: float | None = None) -> bool:
    """Send `task(*args)` to `lane`'s queue, after `countdown` seconds if given. Whether it was sent;
    when not, logs `if_lost` (what happens to the work instead) with the broker's error."""
    from config.celery_app import app  # the Celery app finds every tasks module: never at import time

    try:
        app.send_task(task, args=list(args), queue=queue_name(lane=lane), countdown=countdown)
        return True
    except Exception:
        log.exception("could not enqueue %s%s; %s", task, tuple(args), if_lost)
        return False


def enqueue_once(task: str, *, lane: str, flag: str, ttl_s: int, if_lost: str) -> bool:
    """Send `task()` unless `flag` says one already waits; the flag is set for `ttl_s` seconds, should the
    message be lost. The task clears it (`flag_clear`) when it starts, so the call after that sends the
    next one. Whether a message is on its way."""
    try:
        if not redis_client(PUBLISH).set(flag, 1, nx=True, ex=ttl_s):
            return True  # one waits already
    except Exception:
        log.warning("could not read the flag %s; sending %s anyway", flag, task, exc_info=True)
    sent = enqueue(task, lane=lane, if_lost=if_lost)
    if not sent:
        flag_clear(flag)  # so that the next call tries again
    return sent


def flag_clear(flag: str) -> None:
    """Clear an `enqueue_once` flag; without Redis it expires by itself."""
    try:
        redis_client(PUBLISH).delete(flag)
    except Exception:
        log.warning("could not clear the flag %s; it expires by itself", flag, exc_info=True)
