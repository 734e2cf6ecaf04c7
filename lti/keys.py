"""The tool's signing keys: published in the JWKS first, used for signing only once platforms saw them.

django-lti signs with the newest key the moment it exists; a platform that cached our JWKS a
minute earlier would then refuse every token. Here a key signs only after it has been in the
JWKS for LTI_KEY_PUBLISH_SECONDS (or when it is the only key).
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from lti_tool.models import Key

from infra import clock


def signing_key() -> Key:
    """The newest active key published long enough ago; the oldest active one while none is."""
    active = Key.objects.active()
    published_before = clock.now() - timedelta(seconds=settings.LTI_KEY_PUBLISH_SECONDS)
    ready = active.filter(datetime_created__lte=published_before).order_by("-datetime_created").first()
    if ready is not None:
        return ready
    oldest = active.order_by("datetime_created").first()
    if oldest is None:
        return Key.objects.generate()
    return oldest


@transaction.atomic
def key_rotate(*, retire_after: timedelta | None) -> Key:
    """Publish a new key now (it signs once published long enough); retire keys it supersedes.

    Only keys older than the key signing today (and than `retire_after`) are retired, so the
    JWKS never loses the key in use, unlike django-lti's `rotate_keys`.
    """
    current = signing_key()
    new = Key.objects.generate()
    if retire_after is not None:
        cutoff = min(current.datetime_created, clock.now() - retire_after)
        Key.objects.active().filter(datetime_created__lt=cutoff).update(is_active=False)
    return new


def tool_jwks() -> dict[str, list[dict[str, str]]]:
    return Key.objects.as_jwks()
