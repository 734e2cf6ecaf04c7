"""Stage 2, in a worker: a queued submission becomes this run's to grade.

A claim moves rows queued → running under a fresh claim token and counts the delivery, in one
conditional UPDATE: two workers handed the same row (a redelivered message, the sweeper) cannot
both claim it. Every later write of this run — a result, an error, a requeue — goes through
`owned()`, so a run the sweeper has replaced cannot overwrite its successor's work.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, QuerySet

from assignments.models import Assignment, Extension
from grader.models import Submission
from grader.policy import LOOKUP, Known
from grader.selectors import assignment_parts_attach
from infra import clock
from infra.lanes import NUMERIC
from infra.prepared import prepared_query, prepared_update

DRAIN_BATCH = 8  # numeric rows claimed at once: one claim, one transaction for their results
CLOCK_SLACK = timedelta(seconds=1)  # web and worker hosts' clocks may differ this much (a requeue waits ≥ 5 s)


@dataclass(frozen=True)
class Claimed:
    """A submission this run claimed, read with what grading needs: its assignment with its parts, its
    variant (without the analyses, parsed once per process by grading/variants.py) and whether the
    student has an extension (most have none: then grading reads no extension row)."""

    submission: Submission
    token: uuid.UUID
    extension: Known  # None: the student has none; LOOKUP: read it when the late factor is needed

    @property
    def id(self) -> int:
        return self.submission.id


def submission_claim(*, submission_id: int) -> Claimed | None:
    """One queued row claimed for this run, or None when it is not queued (graded, or claimed elsewhere)."""
    token = uuid.uuid4()
    if _claim(submission_id=submission_id, token=token, now=clock.now()) != 1:
        return None
    row: Submission | None = _for_grading.first(submission_id=submission_id)
    if row is None:
        raise Submission.DoesNotExist(f"no submission {submission_id}")
    assignment_parts_attach(row.assignment)
    return _claimed(row, token)


def batch_claim() -> list[Claimed]:
    """Up to DRAIN_BATCH queued numeric rows that are due, oldest first, claimed under one token (rows
    of one assignment share its object); [] when none is due."""
    token, now = uuid.uuid4(), clock.now()
    due_by = now + CLOCK_SLACK  # a row the web stamped by a clock a little ahead is due all the same
    claim = {"status": Submission.Status.RUNNING, "claim": token, "started_at": now, "deliveries": F("deliveries") + 1}
    if connection.features.has_select_for_update_skip_locked:  # PostgreSQL: skip the rows another drain takes
        with transaction.atomic():  # the row locks hold until the claim commits
            ids: list[int] = _due_locked(now=due_by)
            claimed = Submission.objects.filter(id__in=ids).update(**claim) if ids else 0
    else:  # SQLite: look without the write lock (most looks find nothing); the checks again settle races
        claimed = 0
        for _ in range(3):  # rows seen but taken by another drain meanwhile: look again, there may be more
            ids = _due(now=due_by)
            claimed = Submission.objects.filter(id__in=ids, status=Submission.Status.QUEUED,
                                                enqueued_at__lte=due_by).update(**claim) if ids else 0
            if claimed or not ids:
                break
    if not claimed:
        return []
    rows: list[Submission] = _claimed_rows(token=token)
    assignments: dict[int, Assignment] = {}
    for row in rows:
        if row.assignment_id not in assignments:
            assignment_parts_attach(row.assignment)
            assignments[row.assignment_id] = row.assignment
        row.assignment = assignments[row.assignment_id]
    return [_claimed(row, token) for row in rows]


def owned(*, submission_id: int, token: uuid.UUID) -> QuerySet[Submission]:
    """The row while this run's claim holds it: every write of a result, an error or a requeue goes through it."""
    return Submission.objects.filter(id=submission_id, claim=token, status=Submission.Status.RUNNING)


def give_back(*, token: uuid.UUID, ids: list[int], counted: bool = False) -> None:
    """Claimed rows still running, queued again; their claim does not count as a delivery unless
    `counted` (after a failure, so that a row that keeps failing is given up on all the same)."""
    Submission.objects.filter(id__in=ids, claim=token, status=Submission.Status.RUNNING).update(
        status=Submission.Status.QUEUED, claim=None, started_at=None,
        deliveries=F("deliveries") - (0 if counted else 1))


def _claimed(row: Submission, token: uuid.UUID) -> Claimed:
    has_extension: bool = row.has_extension  # annotated by _grading_rows
    return Claimed(submission=row, token=token, extension=LOOKUP if has_extension else None)


@prepared_update
def _claim(submission_id: int, token: uuid.UUID, now: datetime) -> tuple[QuerySet[Submission], dict[str, Any]]:
    return Submission.objects.filter(id=submission_id, status=Submission.Status.QUEUED), {
        "status": Submission.Status.RUNNING, "claim": token, "started_at": now, "deliveries": F("deliveries") + 1}


def _grading_rows() -> QuerySet[Submission]:
    extension = Extension.objects.filter(assignment_id=OuterRef("assignment_id"), student_id=OuterRef("student_id"))
    return (Submission.objects.select_related("assignment", "variant")
            .defer("assignment__draft", "variant__analysis", "variant__point_analyses")
            .annotate(has_extension=Exists(extension)))


@prepared_query
def _for_grading(submission_id: int) -> QuerySet[Submission]:
    return _grading_rows().filter(id=submission_id)


def _due_rows(now: datetime) -> QuerySet[Submission, int]:
    due = Submission.objects.filter(status=Submission.Status.QUEUED, lane=NUMERIC, enqueued_at__lte=now)
    return due.order_by("id").values_list("id", flat=True)[:DRAIN_BATCH]


@prepared_query
def _due(now: datetime) -> QuerySet[Submission, int]:
    return _due_rows(now)


@prepared_query
def _due_locked(now: datetime) -> QuerySet[Submission, int]:
    return _due_rows(now).select_for_update(skip_locked=True)


@prepared_query
def _claimed_rows(token: uuid.UUID) -> QuerySet[Submission]:
    return _grading_rows().filter(claim=token, status=Submission.Status.RUNNING).order_by("id")  # status: indexed
