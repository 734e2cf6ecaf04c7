"""Stage 1, in the web process: a student's answers become a queued submission.

Check the window, validate (bounded cost, no reference run), then under the student's membership
lock count attempts and the rate, store the row and, after commit, hand it to its lane.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Count, Q, QuerySet

from assignments.models import Assignment, Extension, Membership
from grader.fairness import lane_of
from grader.metrics import throttled_count
from grader.models import Submission
from grader.policy import (
    LOOKUP,
    Known,
    PolicyError,
    RateLimited,
    attempts_left,
    extension_of,
    extra_attempts,
    window_at,
)
from grader.workflow.queueing import held_code_release, submission_enqueue
from grading.answer_parsing import answers_parse
from grading.variants import params_for_student, variant_id_for
from infra import clock
from infra.lanes import NUMERIC
from infra.prepared import prepared_query

log = logging.getLogger(__name__)


class AlreadySubmitted(Exception):
    """The client sent this Idempotency-Key before: `submission` is what it made then. `same`: with the
    same assignment, answers and code (a retry), else the key was reused for something else."""

    def __init__(self, submission: Submission, *, same: bool) -> None:
        super().__init__(f"submission {submission.id} has this idempotency key")
        self.submission, self.same = submission, same


def submission_create(
    *, student: AbstractBaseUser, assignment: Assignment, answers: Mapping[str, Any], code: Mapping[str, Any],
    idempotency_key: str | None = None, extension: Known = LOOKUP,
) -> Submission:
    """Validate, store as queued and enqueue grading after commit (code: held until a slot is free).
    `extension`: the student's extension when the caller read it with the assignment (None: none).

    Raises AnswerErrors (unreadable answers, no attempt used), PolicyError, or AlreadySubmitted when
    `idempotency_key` names an earlier submission of the student (checked before anything else, so a
    retry after the deadline or the rate limit still gets the submission made in time).
    """
    _replayed(student=student, assignment=assignment, answers=answers, code=code, key=idempotency_key)
    if extension is LOOKUP:
        extension = extension_of(assignment=assignment, student_id=student.pk)
    window = window_at(assignment=assignment, student_id=student.pk, extension=extension)
    if not window.is_open:  # before the answers are read: their messages name parts, options and variables
        raise PolicyError(window.reason)
    answers_parse(assignment=assignment, answers=answers, code=code)
    params = params_for_student(assignment=assignment, student_id=student.pk)
    variant_id = variant_id_for(assignment=assignment, params=params)
    try:
        return _stored(student=student, assignment=assignment, answers=answers, code=code, key=idempotency_key,
                       extension=extension, variant_id=variant_id)
    except IntegrityError:  # the key's unique constraint: a concurrent retry won the race
        _replayed(student=student, assignment=assignment, answers=answers, code=code, key=idempotency_key)
        raise


def attempts_used(*, student: AbstractBaseUser, assignment: Assignment) -> int:
    return Submission.objects.filter(student=student, assignment=assignment, attempt__isnull=False).count()


def _replayed(*, student: AbstractBaseUser, assignment: Assignment, answers: Mapping[str, Any],
              code: Mapping[str, Any], key: str | None) -> None:
    """Raises AlreadySubmitted when the student made a submission with this key."""
    if key is None:
        return
    earlier = _keyed.first(student_id=student.pk, key=key)
    if earlier is not None:
        same = earlier.assignment_id == assignment.id and earlier.answers == dict(answers) \
            and earlier.code == dict(code)
        raise AlreadySubmitted(earlier, same=same)


@prepared_query
def _keyed(student_id: int, key: str) -> QuerySet[Submission]:
    return Submission.objects.filter(student_id=student_id, idempotency_key=key)[:1]


def _stored(*, student: AbstractBaseUser, assignment: Assignment, answers: Mapping[str, Any],
            code: Mapping[str, Any], key: str | None, extension: Extension | None, variant_id: int) -> Submission:
    """The row, written under the student's lock after the attempt and rate checks."""
    with transaction.atomic():
        _lock_membership(student=student, assignment=assignment)
        # Again under the student's lock: two concurrent retries make one submission.
        _replayed(student=student, assignment=assignment, answers=answers, code=code, key=key)
        counts = _recent_counts(student=student, assignment=assignment)
        extra = extra_attempts(assignment=assignment, student_id=student.pk, extension=extension)
        if attempts_left(assignment=assignment, used=counts["used"], extra=extra) == 0:
            allowed = (assignment.max_attempts or 0) + extra
            raise PolicyError("You have used your only attempt." if allowed == 1 else
                              f"You have used all {allowed} attempts.")
        _check_rate(assignment=assignment, counts=counts)
        lane = lane_of(code=code, answers=answers, assignment=assignment)
        submission = Submission.objects.create(
            student=student, assignment=assignment, variant_id=variant_id, answers=dict(answers), code=dict(code),
            attempt=counts["used"] + 1, lane=lane, enqueued_at=clock.now() if lane == NUMERIC else None,
            idempotency_key=key,
        )
        if lane == NUMERIC:
            transaction.on_commit(lambda: submission_enqueue(submission.id, NUMERIC))
        else:
            transaction.on_commit(lambda: held_code_release(student.pk))
    log.info("submission created", extra={"submission_id": submission.id, "lane": lane})
    return submission


def _lock_membership(*, student: AbstractBaseUser, assignment: Assignment) -> None:
    """Serialises a student's submissions so attempt numbers never collide. Call inside a transaction."""
    if not _membership_locked(user_id=student.pk, course_id=assignment.course_id):
        raise PolicyError("You are not enrolled in the course of this assignment.")


@prepared_query
def _membership_locked(user_id: int, course_id: int) -> QuerySet[Membership]:
    return Membership.objects.select_for_update().filter(user_id=user_id, course_id=course_id).values_list(
        "id", flat=True)[:1]


def _recent_counts(*, student: AbstractBaseUser, assignment: Assignment) -> dict[str, int]:
    """In one query: attempts used on this assignment, and submissions in the last minute overall and on it."""
    since = clock.now() - timedelta(minutes=1)
    counts: list[dict[str, int]] = _counts(student_id=student.pk, assignment_id=assignment.id, since=since)
    return counts[0] if counts else {"used": 0, "recent": 0, "recent_here": 0}


@prepared_query
def _counts(student_id: int, assignment_id: int, since: datetime) -> QuerySet[Submission, dict[str, int]]:
    recent, here = Q(created_at__gte=since), Q(assignment_id=assignment_id)
    return Submission.objects.filter(student_id=student_id).values("student_id").annotate(
        used=Count("id", filter=here & Q(attempt__isnull=False)), recent=Count("id", filter=recent),
        recent_here=Count("id", filter=recent & here)).values("used", "recent", "recent_here").order_by()


def _check_rate(*, assignment: Assignment, counts: dict[str, int]) -> None:
    """At most GRADER_RATE_LIMIT submissions per student per minute over all assignments, and at most the
    assignment's own rate limit on it when it sets one (0 or empty: none of its own)."""
    limits = ((settings.GRADER_RATE_LIMIT, counts["recent"]), (assignment.rate_limit, counts["recent_here"]))
    for limit, count in limits:
        if limit and count >= limit:
            throttled_count(reason="rate")
            raise RateLimited(f"Too many submissions: at most {limit} a minute. Wait a little and submit again.")
