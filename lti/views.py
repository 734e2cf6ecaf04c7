"""LTI endpoints: OIDC login, launch, JWKS. Thin: validation in lti.validation, mapping in lti.launch."""

from __future__ import annotations

import logging

from django.contrib.auth import login
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_safe
from lti_tool.models import LtiLaunch
from pylti1p3.contrib.django import DjangoOIDCLogin
from pylti1p3.exception import LtiException, OIDCException

from assignments.access import STAFF_ROLES
from infra import clock
from lti.framing import form_action_allow, platform_auth_origins
from lti.keys import signing_key, tool_jwks
from lti.launch import Arrival, LaunchRefused, launch_accept
from lti.models import ContextCourse, DeploymentLaunch
from lti.nrps_sync import roster_sync_enqueue
from lti.tool_config import INACTIVE, ToolConfig
from lti.validation import ToolMessageLaunch, launch_storage, target_is_ours

log = logging.getLogger(__name__)
CHECKED = "lti_cookies_checked"
UNREADABLE = "The launch could not be read: its id_token does not have the shape of an LTI 1.3 launch."
FOR_THE_LMS = "This address is for your LMS"
NOT_FROM_AN_LMS = ("This is the grader's LTI {what}: an LMS {opens} when someone follows a link to the grader in "
                   "an LMS course, so there is nothing to see here. Open the assignment from your LMS course; LMS "
                   "administrators find the setup on /lti/setup/.")
LOGIN_PARAMS = ("iss", "login_hint", "target_link_uri", "lti_message_hint", "lti_deployment_id", "client_id")


def refusal(request: HttpRequest, reason: str, *, status: int = 400, heading: str = "") -> HttpResponse:
    """The readable page every refused login or launch gets (never a 500)."""
    return render(request, "lti/refused.html", {"reason": reason, "heading": heading}, status=status)


@csrf_exempt
@xframe_options_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def oidc_login(request: HttpRequest) -> HttpResponse:
    params = request.POST if request.method == "POST" else request.GET
    if not any(params.get(name) for name in LOGIN_PARAMS):
        return refusal(request, NOT_FROM_AN_LMS.format(what="login (OIDC initiation) URL", opens="opens it"),
                       heading=FOR_THE_LMS)
    if not params.get("target_link_uri"):
        return refusal(request, "The login from the LMS is missing target_link_uri (this tool's launch URL).")
    if not target_is_ours(request=request, target=params.get("target_link_uri")):
        return refusal(request, "target_link_uri does not point to this tool's launch URL.")
    if not params.get(CHECKED):  # first see whether this frame may keep cookies; else offer a new window
        fields = [(name, params[name]) for name in LOGIN_PARAMS if params.get(name)]
        page = render(request, "lti/cookie_check.html", {"fields": fields, "checked": CHECKED})
        auth = platform_auth_origins(issuer=params.get("iss", ""), client_id=params.get("client_id", ""))
        return form_action_allow(page, urls=auth)  # the continued login redirects to the platform's auth URL
    try:
        login_flow = DjangoOIDCLogin(request, ToolConfig(), launch_data_storage=launch_storage())
        return login_flow.redirect(reverse_launch(request))
    except (OIDCException, LtiException) as exc:
        return refusal(request, str(exc), status=403 if str(exc) == INACTIVE else 400)


def reverse_launch(request: HttpRequest) -> str:
    return request.build_absolute_uri(reverse("lti:launch"))


@csrf_exempt
@xframe_options_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def launch(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":  # a browser opening the URL: a page saying what it is, not a bare 405
        page = refusal(request, NOT_FROM_AN_LMS.format(what="launch URL", opens="posts to it"), status=405,
                       heading=FOR_THE_LMS)
        page["Allow"] = "POST"
        return page
    try:
        message_launch = ToolMessageLaunch(request)
        try:
            message_launch.validate()
        except (TypeError, ValueError, KeyError, AttributeError, IndexError):  # a shape lti.claim_shapes missed
            log.exception("a launch PyLTI1p3 could not read")
            return refusal(request, UNREADABLE)
        lti_launch = LtiLaunch(message_launch)
        if not lti_launch.deployment.is_active:
            return refusal(request, f"This LMS deployment ({lti_launch.deployment.deployment_id}) is not activated "
                                    "in the tool yet: the tool's operator activates it on the LMS platforms page.",
                           status=403)
        arrival = launch_accept(lti_launch=lti_launch)
        DeploymentLaunch.objects.update_or_create(deployment=lti_launch.deployment, defaults={"at": clock.now()})
    except LtiException as exc:
        return refusal(request, str(exc), status=_status_for(str(exc)))
    except LaunchRefused as exc:
        return refusal(request, str(exc), status=403)
    login(request, arrival.user, backend="django.contrib.auth.backends.ModelBackend")
    if arrival.role in STAFF_ROLES and lti_launch.nrps_claim:
        _sync_roster_later(context_id=lti_launch.context.id)
    return _destination(request, arrival=arrival, lti_launch=lti_launch)


def _status_for(reason: str) -> int:
    """403 when the platform is not one we trust (or not for this), 400 for a malformed launch."""
    refused = ("registration", "deployment", "signature", "public key", "Client id", "already used", "Nonce",
               "not activated")
    return 403 if any(word.lower() in reason.lower() for word in refused) else 400


def _sync_roster_later(*, context_id: int) -> None:
    row = ContextCourse.objects.filter(context_id=context_id).first()
    if row is not None:
        transaction.on_commit(lambda: roster_sync_enqueue(row.id))


def _destination(request: HttpRequest, *, arrival: Arrival, lti_launch: LtiLaunch) -> HttpResponse:
    if lti_launch.is_deep_link_launch:
        request.session["lti_deep_link"] = {
            "registration": lti_launch.registration.pk, "deployment_id": lti_launch.deployment.deployment_id,
            "settings": lti_launch.get_message_launch().get_launch_data().get(
                "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"),
            "course": arrival.course.pk,
        }
        return redirect("lti:deep-link")
    if arrival.link is None:
        assert arrival.resource_link is not None
        request.session["lti_bind"] = {"resource_link": arrival.resource_link.pk, "course": arrival.course.pk}
        return redirect("lti:bind")
    return redirect("assignment", slug=arrival.link.assignment.slug)


@require_safe
def jwks(request: HttpRequest) -> JsonResponse:
    signing_key()  # the first request creates the tool's first key
    return JsonResponse(tool_jwks())
