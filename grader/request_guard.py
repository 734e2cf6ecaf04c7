"""Request text no database column can hold, refused before any view sees it.

PostgreSQL text cannot contain NUL (U+0000): a `%00` in a query parameter, a path segment or a
form field that reaches a filter or an insert raised DataError, a 500 on every staff search box,
the roster, extensions, overrides and course creation (SQLite accepted it, so only production
failed). No field of this service takes a NUL, so any request carrying one gets a 400 with a
message. Django's form fields already refused it; the views that read `request.GET`/`POST`
directly did not. Login user names longer than any account's are cut for django-axes, whose
failure record holds 255 characters (Django's login form checks the length only in the browser).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

NUL = "\x00"
MESSAGE = "The request contains a NUL character (%00), which no field accepts."
USERNAME_MAX = 150  # Django's User.username


def _has_nul(items: Iterable[tuple[str, list[str]]]) -> bool:
    return any(NUL in key or any(NUL in value for value in values) for key, values in items)


def request_has_nul(request: HttpRequest) -> bool:
    """NUL in the path, a query parameter or a form field (names and values; not file contents).
    API bodies are JSON, read by their own parser: reading `request.POST` here would consume a
    multipart body before DRF could refuse it with a 415."""
    if NUL in request.path or _has_nul(request.GET.lists()):
        return True
    return request.method == "POST" and not _is_api(request) and _has_nul(request.POST.lists())


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


class NulCharacterGuard:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request_has_nul(request):
            if _is_api(request):
                return JsonResponse({"detail": MESSAGE}, status=400)
            return HttpResponseBadRequest(MESSAGE, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


def axes_username(request: HttpRequest, credentials: dict[str, Any] | None) -> str | None:
    """AXES_USERNAME_CALLABLE: the name tried, as django-axes reads it, cut to an account's length."""
    source: Any = credentials if credentials else getattr(request, "data", request.POST)
    name = source.get("username")
    return name[:USERNAME_MAX] if isinstance(name, str) else name
