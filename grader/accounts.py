"""Users, roles and API tokens."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.db import transaction

from assignments.access import USERNAME_RE
from assignments.models import Course
from assignments.services import membership_set
from grader.tokens import token_create


@transaction.atomic
def user_create(
    *, username: str, role: str, course: Course, password: str | None = None, with_token: bool = False
) -> tuple[AbstractUser, str | None]:
    if not USERNAME_RE.match(username):
        raise ValueError(f"invalid user name {username!r}: use letters, digits and @.+-_ (at most 150)")
    user, _ = get_user_model().objects.get_or_create(username=username)
    if password:
        user.set_password(password)
    elif not user.has_usable_password():
        user.set_unusable_password()
    # Course roles are memberships; Django staff (the admin) is for operators only.
    user.save()
    membership_set(user=user, course=course, role=role)
    token = token_create(user=user) if with_token else None  # stored hashed, shown once
    return user, token
