"""Attempt, deadline and late-penalty rules of an assignment, with each student's extension."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.db.models import QuerySet

from assignments.models import Assignment, Extension
from infra import clock
from infra.prepared import prepared_query


class _Lookup(Enum):
    LOOKUP = "look it up"


LOOKUP = _Lookup.LOOKUP  # the student's extension is read from the database; callers that hold it pass it
Known = Extension | None | Literal[_Lookup.LOOKUP]


@prepared_query
def _extension(assignment_id: int, student_id: int) -> QuerySet[Extension]:
    return Extension.objects.filter(assignment_id=assignment_id, student_id=student_id).order_by("pk")[:1]


def extension_of(*, assignment: Assignment, student_id: int | None) -> Extension | None:
    if student_id is None:
        return None
    return _extension.first(assignment_id=assignment.id, student_id=student_id)


class PolicyError(Exception):
    """The submission is not allowed now (closed, no attempts left, too fast)."""


class RateLimited(PolicyError):
    """Too many submissions in the last minute (HTTP 429 in the API)."""


@dataclass(frozen=True)
class Window:
    is_open: bool
    is_late: bool
    late_factor: float
    reason: str = ""
    hours_late: float = 0.0  # past the (student's own) due date


@dataclass(frozen=True)
class StudentPolicy:
    """The assignment's rules as they apply to one student (an extension moves dates, adds attempts)."""

    opens_at: datetime | None
    due_at: datetime | None
    closes_at: datetime | None
    max_attempts: int | None
    late_penalty: list[list[float]] = field(default_factory=list)
    extended: bool = False

    def local(self, when: datetime | None, zone: str) -> datetime | None:
        return when.astimezone(_zone(zone)) if when else None


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def student_policy(*, assignment: Assignment, student_id: int | None, extension: Known = LOOKUP) -> StudentPolicy:
    if extension is LOOKUP:
        extension = extension_of(assignment=assignment, student_id=student_id)
    max_attempts = assignment.max_attempts
    if extension is None:
        return StudentPolicy(assignment.opens_at, assignment.due_at, assignment.closes_at, max_attempts,
                             assignment.late_penalty)
    if max_attempts is not None:
        max_attempts += extension.extra_attempts
    return StudentPolicy(
        assignment.opens_at, extension.due_at or assignment.due_at, extension.closes_at or assignment.closes_at,
        max_attempts, assignment.late_penalty, extended=True,
    )


def window_at(*, assignment: Assignment, at: datetime | None = None, student_id: int | None = None,
              extension: Known = LOOKUP) -> Window:
    at = at or clock.now()
    policy = student_policy(assignment=assignment, student_id=student_id, extension=extension)
    if policy.opens_at and at < policy.opens_at:
        opens = policy.local(policy.opens_at, assignment.time_zone)
        return Window(False, False, 0.0, f"This assignment opens at {opens:%Y-%m-%d %H:%M %Z}.")
    if policy.closes_at and at > policy.closes_at:
        return Window(False, True, 0.0, "This assignment is closed.")
    if policy.due_at and at > policy.due_at:
        hours = (at - policy.due_at).total_seconds() / 3600
        return Window(True, True, late_factor(steps=policy.late_penalty, hours_late=hours), hours_late=hours)
    return Window(True, False, 1.0)


def is_opened(*, assignment: Assignment, at: datetime | None = None) -> bool:
    """Before opens_at students see neither the statement nor the parts."""
    return assignment.opens_at is None or (at or clock.now()) >= assignment.opens_at


def late_factor(*, steps: list[list[float]], hours_late: float) -> float:
    """The factor of the last step reached, e.g. [[0, 0.9], [24, 0.5]]: 0.9 in the first day."""
    factor = 1.0
    for hours, step_factor in sorted(steps):
        if hours_late >= hours:
            factor = step_factor
    return factor


def attempts_left(*, assignment: Assignment, used: int, extra: int = 0) -> int | None:
    if assignment.max_attempts is None:
        return None
    return max(assignment.max_attempts + extra - used, 0)


def extra_attempts(*, assignment: Assignment, student_id: int | None, extension: Known = LOOKUP) -> int:
    if extension is LOOKUP:
        extension = extension_of(assignment=assignment, student_id=student_id)
    return extension.extra_attempts if extension else 0


def revealed_now(*, assignment: Assignment, policy: StudentPolicy, attempts_left: int | None,
                 at: datetime | None = None) -> bool:
    """Whether the assignment's reveal moment (`reveal`) has come for this student, judged by their own
    dates and attempts: an extension postpones it with the deadline it moves."""
    at = at or clock.now()
    reveal = assignment.reveal
    if reveal == Assignment.Reveal.AFTER_DUE:
        return policy.due_at is not None and at > policy.due_at
    if reveal == Assignment.Reveal.AFTER_CLOSE:
        return policy.closes_at is not None and at > policy.closes_at
    if reveal == Assignment.Reveal.AFTER_ATTEMPTS:
        return attempts_left == 0
    return False


def release_now(*, assignment: Assignment, policy: StudentPolicy, attempts_left: int | None,
                at: datetime | None = None) -> str:
    """The feedback level (a `Release`) this student gets now: the assignment's level after the reveal
    moment once it has come for them, else its level before."""
    before, after = assignment.releases
    if before == after:
        return before
    return after if revealed_now(assignment=assignment, policy=policy, attempts_left=attempts_left, at=at) else before
