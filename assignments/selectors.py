"""Reads for the staff pages (what `assignments.access` allows, shaped for templates)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count

from assignments.access import User, staff_courses
from assignments.models import Course, Membership


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
