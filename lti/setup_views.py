"""The page LMS administrators copy from: tool URLs, JWKS, Canvas developer-key JSON, Moodle fields."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from lti.platform_client import LINEITEM_SCOPE, NRPS_SCOPE, SCORE_SCOPE

TITLE = "Autograd grader"


def tool_urls(request: HttpRequest) -> dict[str, str]:
    return {name: request.build_absolute_uri(reverse(f"lti:{name}")) for name in ("login", "launch", "jwks")}


def canvas_json(request: HttpRequest) -> dict[str, Any]:
    urls = tool_urls(request)
    placements = [{"placement": placement, "message_type": "LtiDeepLinkingRequest", "target_link_uri": urls["launch"]}
                  for placement in ("assignment_selection", "link_selection")]
    return {
        "title": TITLE, "description": "Auto-graded autograd and chain-rule assignments",
        "oidc_initiation_url": urls["login"], "target_link_uri": urls["launch"], "public_jwk_url": urls["jwks"],
        "scopes": [LINEITEM_SCOPE, "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly", SCORE_SCOPE,
                   NRPS_SCOPE],
        "extensions": [{"platform": "canvas.instructure.com", "privacy_level": "public",
                        "settings": {"placements": placements}}],
        "custom_fields": {},
    }


@require_safe
def setup_page(request: HttpRequest) -> HttpResponse:
    import json

    return render(request, "lti/setup.html", {"urls": tool_urls(request), "base_url": request.build_absolute_uri("/")
                                              .rstrip("/"), "canvas_json": json.dumps(canvas_json(request), indent=2)})


@require_safe
def canvas_config(request: HttpRequest) -> JsonResponse:
    return JsonResponse(canvas_json(request))
