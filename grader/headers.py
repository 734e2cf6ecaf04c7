"""Response headers every page and API answer gets: no caching of student work, and who
may frame the pages (an LMS over LTI)."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from grader.hooks import resolve

PRIVATE = "private, no-store"


def frame_ancestors(request: HttpRequest, *, framed: bool = True) -> list[str]:
    """CSP_FRAME_ANCESTORS plus what GRADER_FRAME_ANCESTORS_HOOK(request) adds, without repeats.
    `framed=False` (JSON, which no LMS page frames) leaves the hook, a cache round trip, out."""
    origins = list(settings.CSP_FRAME_ANCESTORS) or ["'self'"]
    hook = resolve(settings.GRADER_FRAME_ANCESTORS_HOOK)
    if hook is not None and framed:
        origins += [origin for origin in hook(request) if origin not in origins]
    return origins


class ResponseHeadersMiddleware:
    """`Cache-Control: private, no-store` on everything but static files, unless a view already
    forbade storing (never_cache): pages, fragments, API answers and graph pictures carry a
    student's work, and neither a proxy nor the browser's disk may keep them. Also hands
    django-csp (listed before this middleware) the frame-ancestors of this response: an LMS may
    frame pages and pictures, not the JSON API."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.static_prefix = "/" + settings.STATIC_URL.lstrip("/")

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.path.startswith(self.static_prefix):
            return response
        if "no-store" not in response.get("Cache-Control", ""):
            response["Cache-Control"] = PRIVATE
        replace = dict(getattr(response, "_csp_replace", None) or {})
        framed = not response.get("Content-Type", "").startswith("application/json")
        replace.setdefault("frame-ancestors", frame_ancestors(request, framed=framed))
        response._csp_replace = replace
        return response
