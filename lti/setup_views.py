"""Pages for LMS administrators: the setup page (tool URLs, Canvas JSON, Moodle fields) and the dynamic
registration URL an LMS opens."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_safe

from lti.dynamic_registration import (
    RegistrationRefused,
    RegistrationUrlTaken,
    claim_registration_url,
    dynamic_register,
    give_back,
    registered_with,
    registration_url_valid,
)
from lti.framing import origin_of
from lti.platform_client import LINEITEM_SCOPE, NRPS_SCOPE, SCORE_SCOPE, PlatformError
from lti.platform_views import registrations_listed

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
    """Everyone sees the URLs and the steps; operators also see the registered platforms."""
    registrations = registrations_listed() if request.user.is_staff else None
    return render(request, "lti/setup.html", {
        "urls": tool_urls(request), "base_url": request.build_absolute_uri("/").rstrip("/"),
        "canvas_json": json.dumps(canvas_json(request), indent=2), "registrations": registrations})


@require_safe
def canvas_config(request: HttpRequest) -> JsonResponse:
    return JsonResponse(canvas_json(request))


def _framed_by(response: HttpResponse, url: str) -> HttpResponse:
    """The LMS opens dynamic registration in a frame of its own, before it is a registered platform."""
    origin = origin_of(url)
    response._csp_replace = {"frame-ancestors": ["'self'", *([origin] if origin else [])]}
    return response


@xframe_options_exempt
@require_safe
def dynamic_registration(request: HttpRequest, token: str) -> HttpResponse:
    """GET ?openid_configuration=…&registration_token=…, as the LMS opens it: register, then the close page."""
    config_url = request.GET.get("openid_configuration", "")
    context: dict[str, Any] = {"setup_url": request.build_absolute_uri(reverse("lti:setup"))}
    if not registration_url_valid(token):
        context["reason"] = ("This registration URL is not valid or has expired: ask the grader's operator for a "
                             "new one (on the LMS platforms page).")
        return _framed_by(render(request, "lti/registered.html", context, status=403), config_url)
    if not config_url:
        context["reason"] = ("openid_configuration is missing: paste this URL into the LMS's dynamic registration "
                             "(Moodle: “Tool URL” under “LTI Advantage”; Canvas: “Dynamic Registration URL”).")
        return render(request, "lti/registered.html", context, status=400)
    try:
        claim = claim_registration_url(token)
    except RegistrationUrlTaken as exc:
        context["reason"] = str(exc)
        return _framed_by(render(request, "lti/registered.html", context, status=403), config_url)
    try:  # not in a transaction: the LMS is called over the network meanwhile
        registration = dynamic_register(request=request, config_url=config_url,
                                        registration_token=request.GET.get("registration_token", "")[:4000])
    except BaseException as exc:
        give_back(claim)  # nothing was registered: the administrator may try again with the same URL
        if not isinstance(exc, (RegistrationRefused, PlatformError)):
            raise
        context["reason"] = str(exc)
        return _framed_by(render(request, "lti/registered.html", context, status=400), config_url)
    registered_with(claim, registration)
    context["registration"] = registration
    return _framed_by(render(request, "lti/registered.html", context), config_url)
