"""Writes for courses: the demo course and course membership."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from assignments.models import Course, Membership


def course_demo() -> Course:
    course, _ = Course.objects.get_or_create(
        slug=settings.GRADER_DEMO_COURSE, defaults={"title": "Autograd and computational graphs"}
    )
    return course


def membership_set(*, user: AbstractBaseUser, course: Course, role: str) -> Membership:
    membership, _ = Membership.objects.update_or_create(user=user, course=course, defaults={"role": role})
    return membership
