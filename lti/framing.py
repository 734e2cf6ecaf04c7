"""Which origins may frame the tool (`frame-ancestors` lists registered platforms only), and which
platform origins a tool page's forms may be sent to (`form-action`, beyond 'self').

`platform_frame_origins(request)` is the default GRADER_FRAME_ANCESTORS_HOOK: grader.headers
adds its origins to CSP_FRAME_ANCESTORS on every response, so a registration added in the
admin takes effect without a restart.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from urllib.parse import urlsplit

from django.core.cache import caches
from django.db import connection
from django.http import HttpRequest, HttpResponse
from lti_tool.models import LtiRegistration

from lti.models import FrameOrigin

CACHE_SECONDS = 60


def origin_of(url: str) -> str | None:
    try:
        parts = urlsplit(url)
    except ValueError:  # "http://[::1/x": not a URL at all
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def _cache_key() -> str:
    return f"frame-origins:{connection.settings_dict['NAME']}"  # one Redis may serve several databases


def platform_origins() -> list[str]:
    """Origins of active registrations (issuer, auth URL, extra frame origins), sorted."""
    try:
        cached = caches["lti"].get(_cache_key())
    except Exception:  # Redis down: every page still renders, from the database
        cached = None
    if cached is not None:
        return list(cached)
    urls: set[str] = set()
    for issuer, auth_url in LtiRegistration.objects.active().values_list("issuer", "auth_url"):
        urls.update((issuer, auth_url))
    urls.update(FrameOrigin.objects.filter(registration__is_active=True).values_list("origin", flat=True))
    origins = sorted({origin for url in urls if (origin := origin_of(url))})
    with contextlib.suppress(Exception):
        caches["lti"].set(_cache_key(), origins, CACHE_SECONDS)
    return origins


def platform_origins_forget() -> None:
    """Call after a registration changes, so framing follows at once."""
    with contextlib.suppress(Exception):
        caches["lti"].delete(_cache_key())


def platform_frame_origins(request: HttpRequest) -> list[str]:
    """GRADER_FRAME_ANCESTORS_HOOK: grader.headers adds these to CSP_FRAME_ANCESTORS on every response."""
    return platform_origins()


def platform_auth_origins(*, issuer: str, client_id: str = "") -> list[str]:
    """Origins of the auth URLs of the active registrations of `issuer` (and `client_id`, if the login gave one)."""
    registrations = LtiRegistration.objects.active().filter(issuer=issuer)
    if client_id:
        registrations = registrations.filter(client_id=client_id)
    urls = registrations.values_list("auth_url", flat=True)
    return sorted({origin for url in urls if (origin := origin_of(url))})


def form_action_allow(response: HttpResponse, *, urls: Iterable[str]) -> HttpResponse:
    """Let this page's forms reach these URLs' origins too. CSP `form-action 'self'` also governs the
    redirects a submitted form leads to, so the login's cookie check (a form to the tool that answers
    with a redirect to the platform's auth URL) and the deep-linking return need their platform listed."""
    origins = [origin for url in urls if (origin := origin_of(url))]
    if origins:
        update = dict(getattr(response, "_csp_update", None) or {})
        update["form-action"] = [*update.get("form-action", []), *origins]
        response._csp_update = update  # read by csp.middleware
    return response
