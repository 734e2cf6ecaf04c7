"""API tokens that expire and can be revoked, stored only as a SHA-256 hash.

The clear key is shown once (`create_user --token`); the database and the admin hold its
hash and an 8-character prefix to recognise it. Clients send `Authorization: Token <key>`.
Failed token look-ups count as failed logins for django-axes under the key's prefix and the client
address (the user name `api-token:<prefix>`), so guessing a token is throttled like guessing a
password, while the valid tokens of other people behind the same address (a campus NAT) keep
working: they have prefixes of their own. A prefix that django-axes allowed from an address is
remembered as clean in Redis for CLEAN_SECONDS, and forgotten at its next failure there: while it
is clean, requests skip django-axes' lockout query. Anything else — no mark, Redis down, a mark lost
in a Redis restart — means asking django-axes first, before the token is even looked up, so a
locked-out prefix stays locked out at that address, even with the valid token.
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
from django.db.models import QuerySet
from django.dispatch import receiver
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from infra import clock
from infra.prepared import prepared_query
from infra.redis_client import deployment_key, redis_client

log = logging.getLogger(__name__)
KEYWORD = "Token"
PREFIX_LENGTH = 8
AXES_USERNAME = "api-token"  # failed token look-ups are counted under `api-token:<prefix>`, per address
_PREFIX_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


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
        return self.revoked_at is None and self.expires_at > clock.now()


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def token_create(*, user: AbstractBaseUser, lifetime: timedelta | None = None) -> str:
    """A new key for `user` (returned once, never stored in clear)."""
    key = secrets.token_urlsafe(30)
    days = settings.GRADER_TOKEN_DAYS
    ApiToken.objects.create(user=user, prefix=key[:PREFIX_LENGTH], key_hash=_hash(key),
                            expires_at=clock.now() + (lifetime or timedelta(days=days)))
    return key


def tokens_revoke(*, user: AbstractBaseUser) -> int:
    """Revoke every token of `user` not revoked yet (expired ones too); returns how many."""
    return ApiToken.objects.filter(user=user, revoked_at=None).update(revoked_at=clock.now())


@prepared_query
def _token_by_hash(key_hash: str) -> QuerySet[ApiToken]:
    return ApiToken.objects.select_related("user").filter(key_hash=key_hash)[:1]  # every API request asks


def token_user(*, key: str) -> AbstractBaseUser | None:
    """The active user of an unexpired, unrevoked key; None otherwise."""
    if not key or len(key) > 200:
        return None
    token = _token_by_hash.first(key_hash=_hash(key))
    if token is None or not token.is_active or not token.user.is_active:
        return None
    now = clock.now()
    if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=5):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)  # at most one write per 5 minutes
    return token.user


CLEAN_SECONDS = 30


def lockout_name(key: str) -> str:
    """The name django-axes counts a token's failures under: its prefix (characters outside the keys'
    alphabet shown as `?`, so nothing a database column refuses reaches one)."""
    prefix = "".join(c if c in _PREFIX_CHARS else "?" for c in key[:PREFIX_LENGTH])
    return f"{AXES_USERNAME}:{prefix}"


def _clean_key(request: Any, name: str) -> str:
    """Per deployment, client address and token prefix."""
    from axes.helpers import get_client_ip_address

    return deployment_key("token-address-clean", str(get_client_ip_address(request)), name)


def _is_clean(request: Any, name: str) -> bool:
    """Whether django-axes allowed this prefix from this address within CLEAN_SECONDS, with no failure since."""
    try:
        return bool(redis_client().exists(_clean_key(request, name)))
    except Exception:
        return False  # cannot tell: ask django-axes


def _mark_clean(request: Any, name: str) -> None:
    try:
        redis_client().set(_clean_key(request, name), 1, ex=CLEAN_SECONDS)
    except Exception:
        log.warning("could not remember a clean token address", exc_info=True)


@receiver(user_login_failed)
def _forget_clean(sender: Any, request: Any = None, credentials: Any = None, **_: Any) -> None:
    """A failed token from the address: ask django-axes again for that prefix there."""
    name = credentials.get("username") if isinstance(credentials, dict) else None
    if request is None or not isinstance(name, str) or not name.startswith(f"{AXES_USERNAME}:"):
        return
    try:
        redis_client().delete(_clean_key(request, name))
    except Exception:  # the mark expires within CLEAN_SECONDS anyway
        log.warning("could not forget a clean token address", exc_info=True)


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
        try:
            key = words[1].decode()
        except UnicodeDecodeError:
            key = ""
        name = lockout_name(key)
        credentials: dict[str, Any] = {"username": name}
        clean = _is_clean(django_request, name)
        if not clean and not AxesProxyHandler.is_allowed(django_request, credentials):
            raise exceptions.Throttled(detail="Too many failed attempts with this token from this address; "
                                              "try again later.")
        user = token_user(key=key)
        if user is None:
            user_login_failed.send(sender=__name__, credentials=credentials, request=django_request)  # forgets it
            raise exceptions.AuthenticationFailed("Invalid, expired or revoked token.")
        if not clean:
            _mark_clean(django_request, name)
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


def token_revoke(*, user: AbstractBaseUser, token_id: int) -> bool:
    """Revoke one token of `user` (another user's id revokes nothing); whether it was revoked now."""
    return bool(ApiToken.objects.filter(id=token_id, user=user, revoked_at=None).update(revoked_at=clock.now()))
