"""A course copied into a new term: its assignments (parts, computed variants, published state and
version history), their policies with every date shifted by the same amount, and its staff. No students,
submissions, extensions or LMS links: the new term starts empty of people's work.

Assignment slugs are unique across the server and are the assignments' URLs, so the copies take new
slugs (`<slug>-<new course slug>`) and the source course keeps every URL, API path and LMS link it had.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from assignments.access import STAFF_ROLES, may_create_courses
from assignments.copies import DATES, assignment_copy, copy_slug
from assignments.models import Assignment, Course, Membership
from catalog.spec import DATE_YEARS, date_storable

SLUG_RE = re.compile(r"^[-a-zA-Z0-9_]{1,50}$")
MAX_SHIFT_DAYS = 3660  # ten years either way


class CourseCopyError(ValueError):
    """The copy cannot be made (a taken or malformed slug, an unknown source); nothing was written."""


@dataclass
class CourseCopy:
    course: Course
    slugs: dict[str, str] = field(default_factory=dict)  # source slug → the copy's
    staff: int = 0
    drafts_dropped: list[str] = field(default_factory=list)  # source slugs whose unpublished edits stay behind


def course_copy(*, source: Course, slug: str, title: str = "", shift: timedelta = timedelta(0)) -> CourseCopy:
    """Copy `source` into a new course `slug` (titled `title`, default the source's). Raises CourseCopyError."""
    if not SLUG_RE.match(slug):
        raise CourseCopyError(f"course slug {slug[:60]!r}: use 1–50 letters, digits, - and _")
    if Course.objects.filter(slug=slug).exists():
        raise CourseCopyError(f"a course {slug!r} exists already: choose another slug")
    assignments = list(Assignment.objects.filter(course=source, archived_at=None).order_by("slug"))
    slugs = {a.slug: copy_slug(slug=a.slug, course_slug=slug) for a in assignments}
    taken = sorted(Assignment.objects.filter(slug__in=slugs.values()).values_list("slug", flat=True))
    if taken:
        raise CourseCopyError(f"assignment slugs taken already: {', '.join(taken)}")
    for assignment in assignments:
        for name in DATES:
            value = getattr(assignment, name)
            if value is not None and not date_storable(value + shift):
                raise CourseCopyError(f"{assignment.slug}: {name} shifted leaves the years {DATE_YEARS[0]}–"
                                      f"{DATE_YEARS[1]}")
    with transaction.atomic():
        course = Course.objects.create(slug=slug, title=(title or source.title)[:200])
        copy = CourseCopy(course=course, slugs=slugs)
        for member in Membership.objects.filter(course=source, role__in=STAFF_ROLES):
            Membership.objects.create(user_id=member.user_id, course=course, role=member.role, section=member.section)
            copy.staff += 1
        for assignment in assignments:
            if assignment.draft is not None:
                copy.drafts_dropped.append(assignment.slug)
            assignment_copy(assignment, course=course, slug=slugs[assignment.slug], shift=shift)
    return copy


def course_copy_by(*, user: Any, source: Course, slug: str, title: str = "",
                   shift: timedelta = timedelta(0)) -> CourseCopy:
    """`course_copy` asked for by `user`, who becomes an instructor of the copy. Raises PermissionDenied
    unless the user may create courses (GRADER_COURSE_CREATORS), CourseCopyError as `course_copy` does."""
    if not may_create_courses(user=user):
        raise PermissionDenied("You may not create courses: ask the site's operators.")
    with transaction.atomic():
        copy = course_copy(source=source, slug=slug, title=title, shift=shift)
        Membership.objects.update_or_create(user_id=user.pk, course=copy.course,
                                            defaults={"role": Membership.Role.INSTRUCTOR})
    return copy


def course_start(*, course: Course) -> date | None:
    """The first day of the course in the site's time zone: its earliest open date (else due date)."""
    rows = Assignment.objects.filter(course=course, archived_at=None)
    first = min((d for row in rows.values_list(*DATES) for d in row if d is not None), default=None)
    return timezone.localdate(first) if first is not None else None


def copy_shift(*, course: Course, days: int | None, start: date | None) -> timedelta:
    """The shift of every date: `days`, or the days from the course's first day to `start`. Raises
    CourseCopyError when both are given or the shift passes ten years."""
    if days is not None and start is not None:
        raise CourseCopyError("give either a number of days or a new start date, not both")
    if start is not None:
        first = course_start(course=course)
        days = (start - first).days if first is not None else 0
    days = days or 0
    if abs(days) > MAX_SHIFT_DAYS:
        raise CourseCopyError(f"the shift must be within ten years (±{MAX_SHIFT_DAYS} days); it is {days}")
    return timedelta(days=days)


@dataclass(frozen=True)
class ShiftedDates:
    title: str
    slug: str
    dates: list[tuple[str, datetime | None, datetime | None]]  # (open/due/close, now, in the copy)


def dates_preview(*, course: Course, shift: timedelta) -> list[ShiftedDates]:
    """Each assignment's open, due and close dates as they are and as the copy will have them."""
    rows = Assignment.objects.filter(course=course, archived_at=None).order_by("opens_at", "due_at", "title")
    names = dict(zip(DATES, ("opens", "due", "closes"), strict=True))
    return [ShiftedDates(title=a.title, slug=a.slug,
                         dates=[(names[n], v, v + shift if v is not None else None)
                                for n in DATES for v in [getattr(a, n)]]) for a in rows]
