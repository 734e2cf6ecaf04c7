"""Waking the requests that wait for a submission to finish (the API's `?wait=`, the page's poll).

A worker publishes the submission's id on one Redis channel once its result has committed
(`finished_announce`). Each web process runs one listener thread, subscribed once, that wakes the
threads waiting for that id (`finished_wait`). A waiter also re-reads the row every second, so a
message lost while the listener reconnects delays it by at most that; without Redis it simply
polls the row. Waiting costs no CPU while nothing happens, so one request can replace the dozens
of status polls a client would otherwise send.

The number of waiting requests per process is capped (`GRADER_WAIT_SLOTS`): each holds a server
thread, and at least the others must stay free for submissions. So is each user's share of them
(`PER_USER`), so one student's many tabs or scripted waits cannot take every slot. A request that
finds no free slot is answered at once, as if it had not asked to wait.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings

from infra.redis_client import SUBSCRIBE, deployment_key, redis_client

log = logging.getLogger(__name__)
MAX_WAIT_S = 20.0  # what a client may ask for; callers clamp to it
RECHECK_S = 1.0  # a waiter re-reads the row this often whatever the listener says
PER_USER = 2  # waiting requests one user may hold in one process
CHANNELS = "grader:*:finished"  # one channel per deployment (its queue name), as _channel() spells it

_lock = threading.Lock()
_waiters: dict[int, list[threading.Event]] = defaultdict(list)
_listener: threading.Thread | None = None
_listening = threading.Event()  # set while the listener is subscribed
_slots: threading.BoundedSemaphore | None = None
_per_user: dict[Any, int] = defaultdict(int)


def _channel() -> str:
    return deployment_key("finished")


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def finished_announce(*, submission_ids: list[int], then: Callable[[Any], Any] | None = None) -> None:
    """After commit: the rows are graded or errored. Never raises (a lost message costs a waiter ≤ 1 s).
    `then` adds more commands (the latency metric) to the same round trip to Redis, after the wake-ups."""
    try:
        pipe = redis_client().pipeline(transaction=False)
        for submission_id in submission_ids:
            pipe.publish(_channel(), str(submission_id))
        if then is not None:
            then(pipe)
        pipe.execute()
    except Exception:
        log.warning("could not announce finished submissions %s", submission_ids, exc_info=True)


def _listen() -> None:
    """The listener thread's loop: subscribe, wake waiters, resubscribe after any error. Its own
    connection, without a reply timeout (infra/redis_client.py SUBSCRIBE): it is idle between messages."""
    failures = 0
    while True:
        pubsub = None
        try:
            client = redis_client(SUBSCRIBE)
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            pubsub.psubscribe(CHANNELS)  # the channel is read per message: the queue name may change
            _listening.set()
            failures = 0
            while True:
                message = pubsub.get_message(timeout=5.0)
                if message and message.get("type") == "pmessage" and _text(message.get("channel")) == _channel():
                    _wake(message["data"])
        except Exception:
            failures += 1
            if failures == 1:  # once per outage, not once a second
                log.warning("finished-submission listener lost Redis; waiters poll the row each second until "
                            "it is back", exc_info=True)
            _listening.clear()
            time.sleep(1.0)
        finally:
            if pubsub is not None:
                try:
                    pubsub.close()
                except Exception:
                    pass


def _wake(data: Any) -> None:
    try:
        submission_id = int(data)
    except (TypeError, ValueError):
        return
    with _lock:
        events = _waiters.pop(submission_id, [])
    for event in events:
        event.set()


def _ensure_listener() -> None:
    global _listener
    with _lock:
        if _listener is None or not _listener.is_alive():
            _listener = threading.Thread(target=_listen, name="finished-listener", daemon=True)
            _listener.start()


def _slot_pool() -> threading.BoundedSemaphore:
    global _slots
    with _lock:
        if _slots is None:
            _slots = threading.BoundedSemaphore(max(settings.GRADER_WAIT_SLOTS, 0) or 1)
        return _slots


@contextmanager
def wait_slot(holder: Any) -> Iterator[bool]:
    """A waiting slot if one is free and `holder` has fewer than PER_USER (True), else False at once."""
    if settings.GRADER_WAIT_SLOTS <= 0:
        yield False
        return
    with _lock:
        mine = _per_user[holder] < PER_USER
        if mine:
            _per_user[holder] += 1
    if not mine:
        yield False
        return
    pool = _slot_pool()
    acquired = pool.acquire(blocking=False)
    try:
        yield acquired
    finally:
        if acquired:
            pool.release()
        with _lock:
            _per_user[holder] -= 1
            if _per_user[holder] <= 0:
                del _per_user[holder]


def finished_wait(*, submission_id: int, seconds: float, is_finished: Callable[[], bool], holder: Any = None) -> bool:
    """Wait up to `seconds` (clamped to MAX_WAIT_S) until `is_finished()` is true. `is_finished` reads
    the row; it is called once before waiting, on every wake-up and every RECHECK_S. Returns its last
    answer (also when no waiting slot was free, after one call). `holder`: who waits (the user's id),
    for the per-user cap."""
    seconds = min(max(seconds, 0.0), MAX_WAIT_S)
    if seconds <= 0:
        return is_finished()
    with wait_slot(holder) as waiting:
        if not waiting:
            return is_finished()
        _ensure_listener()
        deadline = time.monotonic() + seconds
        while True:
            event = threading.Event()
            with _lock:
                _waiters[submission_id].append(event)  # before reading: a message sent after it is seen
            try:
                if is_finished():
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                # Without a subscribed listener nobody sets the event: this is then a poll every RECHECK_S.
                event.wait(min(remaining, RECHECK_S))
            finally:
                _forget(submission_id, event)


def _forget(submission_id: int, event: threading.Event) -> None:
    with _lock:
        events = _waiters.get(submission_id)
        if events and event in events:
            events.remove(event)
            if not events:
                del _waiters[submission_id]


def submission_waited(*, submission_id: int, seconds: float, user_id: Any) -> bool:
    """Whether the submission is graded or errored, waiting up to `seconds` for it (the caller has
    checked that user `user_id` may see it)."""
    from grader.models import FINISHED
    from grader.selectors import submission_state

    return finished_wait(submission_id=submission_id, seconds=seconds,
                         is_finished=lambda: submission_state(submission_id=submission_id) in FINISHED,
                         holder=user_id)
