"""Fair shares of the grading capacity: lanes, held code submissions, sandbox budgets.

- Numbers, choices and formulas are graded on the default queue, code on `<queue>-code`, the sweeper
  on `<queue>-maintenance`, each by its own worker pool: a flood of slow code never delays
  a numeric answer or the sweeper.
- A student has at most GRADER_CODE_IN_FLIGHT code submissions on the code queue; the rest
  wait in the database ("held": queued with no enqueued_at) and are released, oldest first,
  when an earlier one finishes (by the finishing task) or by the sweeper. Nothing is dropped.
- Formula answers that may need SymPy's check in the sandbox are graded on the code lane too
  (`lane_of`): the same cap and budget, and never a numeric drain waiting on a sandbox job.
- Code grading time is budgeted per student: past GRADER_SANDBOX_BUDGET_SECONDS within the
  last GRADER_SANDBOX_BUDGET_WINDOW seconds, held submissions wait for the window to move.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import QuerySet, Sum

from assignments.models import Assignment, Part
from grader.models import PENDING, Submission
from infra import clock
from infra.lanes import CODE, NUMERIC
from infra.prepared import prepared_query, prepared_update

log = logging.getLogger(__name__)


def lane_of(*, code: object, answers: Mapping[str, Any] | None = None, assignment: Assignment | None = None) -> str:
    """Code, and formulas that may need SymPy's check, go to the code lane; the rest to the numeric lane.

    A formula answer whose numbers agree with the reference is proved equivalent to the author's formula
    by a sandbox job of up to 4 s: a numeric drain must never wait on one, and that time counts against
    the student's sandbox budget and in-flight cap like code. Which formulas will agree is only known
    once graded, so every answered formula part with an author's formula goes; a part without one is
    settled by its numbers alone and stays numeric."""
    if code:
        return CODE
    if answers and assignment is not None and any(_needs_sympy(part, answers) for part in assignment.parts.all()):
        return CODE
    return NUMERIC


def _needs_sympy(part: Part, answers: Mapping[str, Any]) -> bool:
    if part.kind != Part.Kind.SYMBOLIC or not str(answers.get(part.key) or "").strip():
        return False
    return part.symbolic.formula is not None


def sandbox_seconds_spent(*, student_id: int) -> float:
    since = clock.now() - timedelta(seconds=settings.GRADER_SANDBOX_BUDGET_WINDOW)
    spent = Submission.objects.filter(student_id=student_id, lane=CODE, graded_at__gte=since).aggregate(
        total=Sum("sandbox_seconds"))["total"]
    return float(spent or 0.0)


def code_in_flight(*, student_id: int) -> int:
    return Submission.objects.filter(student_id=student_id, lane=CODE, status__in=PENDING,
                                     enqueued_at__isnull=False).count()


def held_release(*, student_id: int, enqueue: Callable[[int, str], None]) -> list[int]:
    """Release the student's oldest held code submissions into the free slots; returns their ids.

    One query finds the student's active code rows (both in flight and held); the budget is summed
    only when one may be released. Each release is a conditional update, so two releasers never
    enqueue the same row.
    """
    active: list[tuple[int, str, datetime | None]] = _active_code(student_id=student_id)
    held = [row_id for row_id, status, enqueued in active if enqueued is None and status == Submission.Status.QUEUED]
    slots = settings.GRADER_CODE_IN_FLIGHT - sum(enqueued is not None for _, _, enqueued in active)
    if slots <= 0 or not held:
        return []
    budget = settings.GRADER_SANDBOX_BUDGET_SECONDS
    if budget and sandbox_seconds_spent(student_id=student_id) >= budget:
        log.info("student %s is over the sandbox budget; held code waits", student_id)
        from grader.metrics import throttled_count

        throttled_count(reason="budget")
        return []
    released = []
    for submission_id in held[:slots]:
        if _release_held(submission_id=submission_id, now=clock.now()):
            enqueue(submission_id, CODE)
            released.append(submission_id)
    return released


@prepared_query
def _active_code(student_id: int) -> QuerySet[Any]:
    """Every code submission finishing asks (the web on commit, the worker when done)."""
    return (Submission.objects.filter(student_id=student_id, lane=CODE, status__in=PENDING)
            .order_by("id").values_list("id", "status", "enqueued_at")[:1000])


@prepared_update
def _release_held(submission_id: int, now: datetime) -> tuple[QuerySet[Submission], dict[str, Any]]:
    held = Submission.objects.filter(id=submission_id, enqueued_at__isnull=True, status=Submission.Status.QUEUED)
    return held, {"enqueued_at": now}


def students_with_held() -> list[int]:
    rows = Submission.objects.filter(lane=CODE, status=Submission.Status.QUEUED, enqueued_at__isnull=True)
    return sorted(set(rows.values_list("student_id", flat=True)[:5000]))
