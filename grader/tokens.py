"""API tokens that expire and can be revoked, stored only as a SHA-256 hash.

The clear key is shown once (`create_user --token`); the database and the admin hold its
hash and an 8-character prefix to recognise it. Clients send `Authorization: Token <key>`.
Failed token look-ups count as failed logins for django-axes (per client address), so
guessing tokens is throttled like guessing passwords. A failure also marks its address in Redis
for the cool-off: requests with a valid token skip django-axes' lockout query unless their
address is marked (or Redis cannot say), so the common request costs no lockout query while a
locked-out address stays locked out even for a valid token.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.signals import user_login_failed
from django.db import models
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

log = logging.getLogger(__name__)
KEYWORD = "Token"
PREFIX_LENGTH = 8
AXES_USERNAME = "api-token"  # the "user name" failed token look-ups are counted under, per address


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    prefix = models.CharField(max_length=PREFIX_LENGTH, help_text="First characters of the key, to recognise it")
    key_hash = models.CharField(max_length=64, unique=True, editable=False, help_text="SHA-256 of the key")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "grader"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… of {self.user} (expires {self.expires_at:%Y-%m-%d})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and self.expires_at > timezone.now()


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def token_create(*, user: AbstractBaseUser, lifetime: timedelta | None = None) -> str:
    """A new key for `user` (returned once, never stored in clear)."""
    key = secrets.token_urlsafe(30)
    days = settings.GRADER_TOKEN_DAYS
    ApiToken.objects.create(user=user, prefix=key[:PREFIX_LENGTH], key_hash=_hash(key),
                            expires_at=timezone.now() + (lifetime or timedelta(days=days)))
    return key


def tokens_revoke(*, user: AbstractBaseUser) -> int:
    """Revoke every token of `user` not revoked yet (expired ones too); returns how many."""
    return ApiToken.objects.filter(user=user, revoked_at=None).update(revoked_at=timezone.now())


def token_user(*, key: str) -> AbstractBaseUser | None:
    """The active user of an unexpired, unrevoked key; None otherwise."""
    if not key or len(key) > 200:
        return None
    token = ApiToken.objects.select_related("user").filter(key_hash=_hash(key)).first()
    if token is None or not token.is_active or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=5):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)  # at most one write per 5 minutes
    return token.user


def _failure_key(request: Any) -> str:
    """Per deployment (its queue name, as the metrics keys) and client address."""
    from axes.helpers import get_client_ip_address

    from config.celery_app import app

    return f"grader:{app.conf.task_default_queue}:token-failures:{get_client_ip_address(request)}"


def _failure_mark(request: Any) -> None:
    """This address failed a token look-up: its valid tokens are checked against the lockout for
    the cool-off (plus a minute), or for 30 days when lockouts never cool off."""
    from axes.helpers import get_cool_off

    from grader.metrics import _redis

    cool_off = get_cool_off(request)
    seconds = int(cool_off.total_seconds()) + 60 if cool_off else 30 * 86400
    try:
        _redis().set(_failure_key(request), 1, ex=seconds)
    except Exception:
        log.warning("could not mark a failed token address", exc_info=True)


def _maybe_locked(request: Any) -> bool:
    """Whether django-axes must be asked: the address failed recently, or Redis cannot tell."""
    from grader.metrics import _redis

    try:
        return bool(_redis().exists(_failure_key(request)))
    except Exception:
        return True


class ExpiringTokenAuthentication(BaseAuthentication):
    """`Authorization: Token <key>` against hashed, expiring, revocable keys, throttled by django-axes."""

    def authenticate(self, request: Request) -> tuple[AbstractBaseUser, None] | None:
        words = get_authorization_header(request).split()
        if not words or words[0].lower() != KEYWORD.lower().encode():
            return None
        if len(words) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header: give 'Token <key>'.")
        from axes.handlers.proxy import AxesProxyHandler

        django_request = request._request
        credentials: dict[str, Any] = {"username": AXES_USERNAME}
        try:
            key = words[1].decode()
        except UnicodeDecodeError:
            key = ""
        user = token_user(key=key)
        if (user is None or _maybe_locked(django_request)) and not AxesProxyHandler.is_allowed(django_request,
                                                                                               credentials):
            raise exceptions.Throttled(detail="Too many failed token attempts from this address; try again later.")
        if user is None:
            _failure_mark(django_request)
            user_login_failed.send(sender=__name__, credentials=credentials, request=django_request)
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")
        return user, None

    def authenticate_header(self, request: Request) -> str:
        return KEYWORD


class ExpiringTokenScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI schema names the token header (drf-spectacular)."""

    target_class = "grader.tokens.ExpiringTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": 'An expiring API token with the prefix "Token", e.g. "Token 3Jx…"'}
