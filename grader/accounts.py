"""Users, roles and API tokens; who may set a password by email, and the link that sets it."""

from __future__ import annotations

import hashlib
import logging
import unicodedata
from collections.abc import Iterator
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.forms import PasswordResetForm
from django.contrib.auth.models import AbstractBaseUser, AbstractUser
from django.contrib.auth.tokens import default_token_generator
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from assignments.access import USERNAME_RE, made_by_lms
from assignments.models import Course
from assignments.services import membership_set
from grader.tokens import token_create
from infra.redis_client import deployment_key, redis_client

log = logging.getLogger(__name__)
RESET_EVERY_SECONDS = 300  # one password-reset email per address in this time: no inbox flooding


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


def _address(email: str) -> str:
    """An email address as compared: Unicode-normalised, case folded."""
    return unicodedata.normalize("NFKC", email).casefold()


class AccountPasswordResetForm(PasswordResetForm):
    """Django's password reset, for accounts that have no password yet too: a roster upload makes them
    without one, and this is how they get one. An account the LMS made logs in through the LMS only and
    gets no email. The answer is the same whether or not an account matched."""

    def get_users(self, email: str) -> Iterator[Any]:
        users = get_user_model()._default_manager.filter(email__iexact=email, is_active=True).exclude(made_by_lms())
        found = [user for user in users if _address(user.email) == _address(email)]
        return iter(found if found and _first_reset_in_a_while(email) else [])


def _first_reset_in_a_while(email: str) -> bool:
    """Whether no reset email went to this address in RESET_EVERY_SECONDS (marked in Redis, shared by every
    web process); a Redis that does not answer lets the email go."""
    key = deployment_key("password-reset", hashlib.sha256(_address(email).encode()).hexdigest()[:32])
    try:
        return bool(redis_client().set(key, 1, nx=True, ex=RESET_EVERY_SECONDS))
    except Exception:
        log.warning("could not check the password-reset rate of an address", exc_info=True)
        return True


def set_password_path(*, user: AbstractBaseUser) -> str:
    """The path of the page where `user` chooses a password (Django's reset token: it works once, and
    lasts PASSWORD_RESET_TIMEOUT)."""
    return reverse("password_reset_confirm", kwargs={"uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
                                                     "token": default_token_generator.make_token(user)})
