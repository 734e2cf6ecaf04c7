"""An empty course that an LMS's first launch created starts from a copy: the assignments of another course
its instructor teaches, or the shipped catalog (the demo course's assignments). Copies are made as a new
term's are (`assignments.copies`), with their slugs (`<slug>-<this course's slug>`), so the source keeps every
URL."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.db.models import QuerySet

from assignments.access import staff_courses
from assignments.copies import assignment_copy, copy_slug
from assignments.models import Assignment, Course
from assignments.services import course_demo

CATALOG = "catalog"


def course_is_empty(*, course: Course) -> bool:
    return not course.assignments.exists()


def start_sources(*, user: AbstractBaseUser | AnonymousUser, course: Course) -> QuerySet[Course]:
    """The user's other courses (as instructor) with published assignments to copy."""
    return (staff_courses(user=user, authoring=True).exclude(pk=course.pk)
            .filter(assignments__published=True, assignments__archived_at=None).distinct())


@transaction.atomic
def course_start_copy(*, user: AbstractBaseUser | AnonymousUser, course: Course, source: str) -> int:
    """Copy the published assignments of `source` (a course id of the user's, or CATALOG) into the empty
    `course`; returns how many. Raises ValueError for a source the user may not copy or a course not empty."""
    if not course_is_empty(course=course):
        raise ValueError("This course has assignments already.")
    origin = course_demo() if source == CATALOG else start_sources(user=user, course=course).filter(
        pk=int(source) if source.isdigit() else 0).first()
    if origin is None:
        raise ValueError("Choose one of your courses or the shipped catalog.")
    assignments = Assignment.objects.filter(course=origin, published=True, archived_at=None).order_by("slug")
    copied = 0
    for assignment in assignments:
        slug = copy_slug(slug=assignment.slug, course_slug=course.slug)
        if not Assignment.objects.filter(slug=slug).exists():
            assignment_copy(assignment, course=course, slug=slug, shift=timedelta(0))
            copied += 1
    return copied
