"""Reads for the staff pages (what `assignments.access` allows, shaped for templates)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count

from assignments.access import User, staff_courses
from assignments.models import Assignment, AssignmentVersion, Course, Membership

_NUMBER = re.compile(r"(\d+)")


def by_title(assignments: Iterable[Assignment]) -> list[Assignment]:
    """Assignments in the order staff read them: by title, numbers by value ("Week 2" before "Week 10"),
    then slug. A republish that moves a due date moves nothing."""
    def key(assignment: Assignment) -> tuple[list[tuple[int, str]], str]:
        words = _NUMBER.split(assignment.title.casefold())
        return [(int(w), "") if w.isdigit() else (-1, w) for w in words], assignment.slug
    return sorted(assignments, key=key)


@dataclass(frozen=True)
class StaffCourseRow:
    course: Course
    role: str
    assignments: int
    students: int


def staff_course_rows(*, user: User) -> list[StaffCourseRow]:
    courses = staff_courses(user=user).annotate(n_assignments=Count("assignments", distinct=True))
    roles = dict(Membership.objects.filter(user_id=user.pk, course__in=courses).values_list("course_id", "role"))
    students = dict(
        Membership.objects.filter(course__in=courses, role=Membership.Role.STUDENT)
        .values("course_id").annotate(n=Count("id")).values_list("course_id", "n")
    )
    return [
        StaffCourseRow(course=c, role=roles[c.pk], assignments=c.n_assignments, students=students.get(c.pk, 0))
        for c in courses
    ]


def version_graded_against(*, assignment_id: int, graded_at: datetime | None) -> AssignmentVersion | None:
    """The published version a submission was graded with: the last publish before it was graded.

    Versions are immutable and a published assignment changes only by publishing, so this is
    exact. None for a submission not graded yet or graded before the first publish from the UI.
    """
    if graded_at is None:
        return None
    return (AssignmentVersion.objects.filter(assignment_id=assignment_id, published_at__lte=graded_at)
            .order_by("-number").first())
