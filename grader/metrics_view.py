"""`/metrics` for Prometheus: staff, a bearer METRICS_TOKEN, or a METRICS_ALLOWED_IPS address."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from grader.metrics import metrics_text


def _allowed(request: HttpRequest) -> bool:
    if request.user.is_authenticated and request.user.is_staff:
        return True
    token = settings.METRICS_TOKEN
    given = request.headers.get("Authorization", "")
    if token and hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        return True
    return request.META.get("REMOTE_ADDR") in settings.METRICS_ALLOWED_IPS


@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    if not _allowed(request):
        return HttpResponse("Not allowed: log in as staff or send the metrics token.\n", status=403,
                            content_type="text/plain")
    return HttpResponse(metrics_text(), content_type="text/plain; version=0.0.4; charset=utf-8")
