"""Misconception analytics of one assignment, read from the stored result documents."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.utils import timezone

from assignments.access import by_course_staff
from assignments.models import Assignment
from courseops.misconceptions import STUCK_AFTER, Attempt, analytics_csv_rows, assignment_analytics
from grader.models import Submission

__all__ = ["analytics_csv_rows", "analytics_read", "assignment_attempts"]


def assignment_attempts(*, assignment: Assignment) -> Iterator[Attempt]:
    """Every counted, graded attempt of a student at the assignment (infrastructure errors used no attempt;
    what the course's staff try in the student view is no student's)."""
    rows = Submission.objects.filter(~by_course_staff(), assignment=assignment, status=Submission.Status.GRADED,
                                     attempt__isnull=False, result__isnull=False).order_by("id").values_list(
        "id", "student__username", "attempt", "created_at", "result__document")
    for submission_id, username, attempt, created_at, document in rows.iterator(chunk_size=1000):
        yield Attempt(submission_id=submission_id, student=username, attempt=attempt,
                      day=timezone.localtime(created_at).date(), parts=document.get("parts", []))


def analytics_read(*, assignment: Assignment, stuck_after: int = STUCK_AFTER) -> dict[str, Any]:
    """{"parts": {key: {attempts, wrong, kinds, paths, first/final, by_day, stuck}}} in part order."""
    order = list(assignment.parts.order_by("order").values_list("key", flat=True))
    data = assignment_analytics(assignment_attempts(assignment=assignment), part_order=order,
                                stuck_after=stuck_after)
    return {"assignment": assignment.slug, **data}
