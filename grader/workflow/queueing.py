"""Handing submissions to the worker lanes: a numeric row makes sure a drain is on its way, a code row
gets a task of its own once the student has a free sandbox slot (grader/fairness.py)."""

from __future__ import annotations

import logging

from grader.fairness import held_release
from infra.enqueue import enqueue, enqueue_once
from infra.lanes import NUMERIC
from infra.redis_client import deployment_key

log = logging.getLogger(__name__)
DRAIN_FLAG_S = 5  # a queued drain's flag lives this long, should its message be lost
IF_LOST = "the row stays queued and the sweeper enqueues it again"


def drain_flag() -> str:
    """The Redis key that says a drain message is waiting on the numeric queue."""
    return deployment_key("drain-queued")  # the numeric lane's queue is the default queue


def drain_wake() -> None:
    """Make sure a numeric drain is on its way: one Redis round trip, sending one unless one waits."""
    enqueue_once("grader.grade_numeric", lane=NUMERIC, flag=drain_flag(), ttl_s=DRAIN_FLAG_S, if_lost=IF_LOST)


def submission_enqueue(submission_id: int, lane: str) -> None:
    """A numeric row wakes a drain (which claims every due row); any other gets a task of its own."""
    if lane == NUMERIC:
        drain_wake()
    else:
        enqueue("grader.grade_submission", submission_id, lane=lane, if_lost=IF_LOST)


def held_code_release(student_id: int) -> list[int]:
    """Enqueue the student's held code submissions that now fit their slots and budget; their ids.
    Never raises: the sweeper releases them later."""
    try:
        return held_release(student_id=student_id, enqueue=submission_enqueue)
    except Exception:
        log.exception("could not release held code submissions of student %s", student_id)
        return []
