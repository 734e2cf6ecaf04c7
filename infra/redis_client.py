"""Redis clients, one per purpose and process, each with the timeouts its callers can afford.

Redis is the broker, and also where counters, wake-ups and short-lived marks live. What a caller does
when Redis is slow decides the timeouts:

- `COMMAND` (0.5 s to connect, 0.5 s per reply): metrics, API-token marks, finished-submission
  wake-ups. These run inside a request or a grading batch and are worth less than it: a slow Redis
  loses the command, never the request.
- `PUBLISH` (1 s to connect, 2 s per reply): sending a task (infra/enqueue.py). Losing it leaves the
  row queued for the sweeper, so it may wait a little longer than a counter.
- `SUBSCRIBE` (2 s to connect, no reply timeout, a health check every 30 s): the listener thread of
  grader/finished.py, idle between messages by design.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings


@dataclass(frozen=True)
class Timeouts:
    connect_s: float
    reply_s: float | None
    health_check_s: int = 0


COMMAND = Timeouts(connect_s=0.5, reply_s=0.5)
PUBLISH = Timeouts(connect_s=1.0, reply_s=2.0)
SUBSCRIBE = Timeouts(connect_s=2.0, reply_s=None, health_check_s=30)

_clients: dict[tuple[str, Timeouts], Any] = {}


def deployment_key(*parts: str) -> str:
    """A Redis key of this deployment's own, `grader:<queue>:<parts…>`: deployments that share a Redis
    (or a test session beside a running site) are told apart by their Celery queue's name."""
    from config.celery_app import app  # the Celery app finds every tasks module: never at import time

    return ":".join(["grader", app.conf.task_default_queue, *parts])


def redis_client(timeouts: Timeouts = COMMAND, *, url: str | None = None) -> Any:
    """The process's client (and connection pool) for the broker's Redis (or `url`) with these timeouts.
    SUBSCRIBE clients are made anew each call: a subscription holds its connection."""
    import redis

    url = url or settings.CELERY_BROKER_URL
    key = (url, timeouts)
    if timeouts is SUBSCRIBE or key not in _clients:
        client = redis.Redis.from_url(url, socket_connect_timeout=timeouts.connect_s, socket_timeout=timeouts.reply_s,
                                      health_check_interval=timeouts.health_check_s)
        if timeouts is SUBSCRIBE:
            return client
        _clients[key] = client
    return _clients[key]
