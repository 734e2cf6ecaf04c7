"""Let registered LMS platforms frame the tool, and nobody else."""

from __future__ import annotations

from collections.abc import Callable

from django.apps import apps
from django.http import HttpRequest, HttpResponse

from lti.framing import frame_ancestors

CSP = "Content-Security-Policy"


class PlatformFramingMiddleware:
    """Adds `frame-ancestors 'self' <platform origins>` to every response.

    X-Frame-Options (DENY) stays: browsers that know CSP ignore it when frame-ancestors is
    present, older ones keep refusing every frame. Listed after django-csp's middleware, it
    asks it (`_csp_replace`) to write the directive; a CSP header set by someone else keeps
    its directives and gets ours replaced or added.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        ancestors = frame_ancestors()
        response._csp_replace = {"frame-ancestors": ancestors}
        if apps.is_installed("csp"):
            return response  # django-csp writes the header, with our directive
        directive = "frame-ancestors " + " ".join(ancestors)
        if CSP in response:
            kept = [d for d in response[CSP].split(";") if d.strip() and not d.strip().startswith("frame-ancestors")]
            response[CSP] = "; ".join([*(d.strip() for d in kept), directive])
        else:
            response[CSP] = directive
        return response
