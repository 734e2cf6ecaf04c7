"""Attempt, deadline and late-penalty rules of an assignment."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from assignments.models import Assignment


def _now() -> datetime:
    """The one clock of grading policy, so tests can move it."""
    return timezone.now()


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


def window_at(*, assignment: Assignment, at: datetime | None = None) -> Window:
    at = at or _now()
    if assignment.opens_at and at < assignment.opens_at:
        return Window(False, False, 0.0, f"This assignment opens at {assignment.opens_at:%Y-%m-%d %H:%M %Z}.")
    if assignment.closes_at and at > assignment.closes_at:
        return Window(False, True, 0.0, "This assignment is closed.")
    if assignment.due_at and at > assignment.due_at:
        hours = (at - assignment.due_at).total_seconds() / 3600
        return Window(True, True, late_factor(steps=assignment.late_penalty, hours_late=hours))
    return Window(True, False, 1.0)


def late_factor(*, steps: list[list[float]], hours_late: float) -> float:
    """The factor of the last step reached, e.g. [[0, 0.9], [24, 0.5]]: 0.9 in the first day."""
    factor = 1.0
    for hours, step_factor in sorted(steps):
        if hours_late >= hours:
            factor = step_factor
    return factor


def attempts_left(*, assignment: Assignment, used: int) -> int | None:
    if assignment.max_attempts is None:
        return None
    return max(assignment.max_attempts - used, 0)
