"""Sending a task with one Redis LPUSH: the submit request's hottest call, without kombu's generic producer.

`apply_async` spends about a millisecond of CPU per message on routing, signals, the producer pool,
declarations and kombu's generic publish, more than the rest of storing a submission. The message
is the same every time but for its ids and arguments, so this writes the Celery protocol-2 message
`apply_async` would send (tests/test_publish.py compares the two key by key) straight onto the
queue's list in the broker, as kombu's Redis transport does: a worker cannot tell them apart.

Reached only through infra/enqueue.py, and only for a Redis broker and a task without eta or
countdown; anything else goes through `apply_async` (eager mode in unit tests, other brokers). Why it
is kept, what it depends on and what guards it: docs/decisions/0001-fast-publish.md. Raises what
the Redis client raises, as `apply_async` would (infra/enqueue.py logs it).
"""

from __future__ import annotations

import base64
import json
import os
import socket
import uuid
from typing import Any

from infra.redis_client import PUBLISH, redis_client

_EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}


def _redis(url: str) -> Any:
    return redis_client(PUBLISH, url=url)


def _lean(app: Any) -> bool:
    url = str(app.conf.broker_url or "")
    # What kombu or Celery would do differently from this message: rename the key, prioritise, use TLS options.
    plain = not (app.conf.broker_transport_options or {}).get("global_keyprefix") and not app.conf.broker_use_ssl \
        and not app.conf.task_default_priority and not app.conf.task_queue_max_priority
    return url.startswith(("redis://", "unix://")) and not app.conf.task_always_eager and plain


def message(*, app: Any, task: Any, args: list[Any], queue: str, task_id: str | None = None,
            delivery_tag: str | None = None, reply_to: str | None = None) -> dict[str, Any]:
    """The protocol-2 message apply_async(args=args, queue=queue) sends for `task` through Redis."""
    task_id = task_id or str(uuid.uuid4())
    hard = task.time_limit if task.time_limit is not None else app.conf.task_time_limit
    soft = task.soft_time_limit if task.soft_time_limit is not None else app.conf.task_soft_time_limit
    body = json.dumps([list(args), {}, _EMBED])
    return {
        "body": base64.b64encode(body.encode()).decode(),
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": {
            "lang": "py", "task": task.name, "id": task_id, "shadow": None, "eta": None, "expires": None,
            "group": None, "group_index": None, "retries": 0, "timelimit": [hard, soft], "root_id": task_id,
            "parent_id": None, "argsrepr": repr(list(args)) if args else "()", "kwargsrepr": "{}",
            "origin": f"gen{os.getpid()}@{socket.gethostname()}", "ignore_result": bool(task.ignore_result),
            "replaced_task_nesting": 0, "stamped_headers": None, "stamps": {},
        },
        "properties": {
            "correlation_id": task_id, "reply_to": reply_to or str(app.thread_oid), "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": queue}, "priority": 0, "body_encoding": "base64",
            "delivery_tag": delivery_tag or str(uuid.uuid4()),
        },
    }


def task_publish(task: Any, *, args: list[Any], queue: str) -> None:
    """`task.apply_async(args=args, queue=queue)`, in one LPUSH when the broker is Redis."""
    app = task.app
    if not _lean(app):
        task.apply_async(args=args, queue=queue)
        return
    _redis(str(app.conf.broker_url)).lpush(queue, _text(app=app, task=task, args=args, queue=queue))


# SET flag NX EX ttl, and only if it was not set, LPUSH the message: one round trip, atomic.
_ONCE = """
if redis.call('set', KEYS[1], '1', 'NX', 'EX', tonumber(ARGV[2])) then
  redis.call('lpush', KEYS[2], ARGV[1])
  return 1
end
return 0
"""
_scripts: dict[str, Any] = {}


def task_publish_once(task: Any, *, args: list[Any], queue: str, flag: str, ttl_s: int) -> bool:
    """Publishes like task_publish unless `flag` is set, and sets it for `ttl_s` seconds: while one such
    message waits, more calls send nothing. Whether this call sent one. The task clears the flag
    (`flag_clear`) when it starts, so the next call after that sends the next one."""
    app = task.app
    if not _lean(app):
        task.apply_async(args=args, queue=queue)
        return True
    url = str(app.conf.broker_url)
    if url not in _scripts:
        _scripts[url] = _redis(url).register_script(_ONCE)
    sent = _scripts[url](keys=[flag, queue], args=[_text(app=app, task=task, args=args, queue=queue), ttl_s])
    return bool(sent)


# Stand-ins for what differs between messages of one template: ids, and the sending thread's oid.
_ID, _TAG, _REPLY = ("00000000-0000-4000-8000-00000000001d", "00000000-0000-4000-8000-0000000000a9",
                     "00000000-0000-4000-8000-0000000000c4")
_templates: dict[tuple[str, str], str] = {}


def _text(*, app: Any, task: Any, args: list[Any], queue: str) -> str:
    """The message as JSON text. One without arguments (a drain) is the same every time but for its ids:
    it comes from a template per task and queue with fresh ids put in. One with arguments (a submission's
    id) is built anew: its template would never be used again."""
    if args:
        return json.dumps(message(app=app, task=task, args=args, queue=queue))
    template = _templates.get((task.name, queue))
    if template is None:
        template = _templates[(task.name, queue)] = json.dumps(message(
            app=app, task=task, args=[], queue=queue, task_id=_ID, delivery_tag=_TAG, reply_to=_REPLY))
    return template.replace(_ID, str(uuid.uuid4())).replace(_TAG, str(uuid.uuid4())).replace(
        _REPLY, str(app.thread_oid))


def flag_clear(app: Any, flag: str) -> None:
    """The flag of task_publish_once cleared; without Redis it expires by itself."""
    if _lean(app):
        _redis(str(app.conf.broker_url)).delete(flag)
