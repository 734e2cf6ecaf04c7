"""Writes for courses: the demo course, course membership, and who an account is in its LMS."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from assignments.models import Course, LmsPerson, Membership


def course_demo() -> Course:
    course, _ = Course.objects.get_or_create(
        slug=settings.GRADER_DEMO_COURSE, defaults={"title": "Autograd and computational graphs"}
    )
    return course


def membership_set(*, user: AbstractBaseUser, course: Course, role: str) -> Membership:
    membership, _ = Membership.objects.update_or_create(user=user, course=course, defaults={"role": role})
    return membership


def lms_person_set(*, user: AbstractBaseUser, lms_id: str, sis_id: str = "") -> LmsPerson:
    """Remember the LMS's ids of `user`; an empty `sis_id` keeps the one known (a launch may omit it)."""
    person, created = LmsPerson.objects.get_or_create(user=user, defaults={"lms_id": lms_id[:255],
                                                                           "sis_id": sis_id[:255]})
    changed = {"lms_id": lms_id[:255], **({"sis_id": sis_id[:255]} if sis_id else {})}
    if not created and any(getattr(person, name) != value for name, value in changed.items()):
        for name, value in changed.items():
            setattr(person, name, value)
        person.save(update_fields=[*changed, "updated_at"])
    return person
