"""The server-error handler (`handler500`): a request that failed because the database is briefly
out of reach (a restart, a failover, a full connection pool) is answered 503 with Retry-After,
instead of a 500 that reads as a bug.
Any other uncaught error keeps Django's plain 500 page."""

from __future__ import annotations

import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse

RETRY_AFTER_SECONDS = 5
MESSAGE = ("The grader is briefly unavailable (its database is out of reach). Check your submissions, "
           "then try again in a few seconds.")


def server_error(request: HttpRequest) -> HttpResponse:
    error = sys.exc_info()[1]
    if not isinstance(error, (OperationalError, InterfaceError)):
        return HttpResponseServerError("<h1>Server error (500)</h1>", content_type="text/html")
    if request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", ""):
        response: HttpResponse = JsonResponse({"detail": MESSAGE}, status=503)
    else:
        response = HttpResponse(f"<h1>Briefly unavailable</h1><p>{MESSAGE}</p>", status=503,
                                content_type="text/html")
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response
