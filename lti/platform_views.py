"""The operators' LMS platforms page: register, list, edit, activate and deactivate platforms and deployments.

Only site staff (`is_staff`) reach it: anonymous visitors are sent to log in, everyone else gets 403.
It writes through `lti.registration`, the same path as `manage.py lti_register`.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods
from lti_tool.models import LtiDeployment, LtiRegistration

from lti.dynamic_registration import registration_url
from lti.forms import PlatformForm
from lti.models import ContextCourse
from lti.registration import RegistrationError, active_set, registration_edit, registration_upsert


def _operator_only(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise PermissionDenied("This page is for the site's operators (staff accounts).")


def registrations_listed() -> list[LtiRegistration]:
    """Every registration with its deployments and their last launch; inactive ones (awaiting an operator) first."""
    deployments = LtiDeployment.objects.select_related("last_launch").order_by("deployment_id")
    return list(LtiRegistration.objects.prefetch_related(Prefetch("deployments", queryset=deployments))
                .order_by("is_active", "name", "pk")[:500])


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def platforms_page(request: HttpRequest) -> HttpResponse:
    _operator_only(request)
    form = PlatformForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            registration, _ = registration_upsert(spec=form.spec())
        except RegistrationError as exc:
            form.refuse(exc)
        else:
            return redirect("lti:platform", pk=registration.pk)
    context = {"registrations": registrations_listed(), "form": form,
               "registration_url": registration_url(request), "days": settings.LTI_REGISTRATION_URL_DAYS}
    return render(request, "lti/platforms.html", context, status=400 if form.errors else 200)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def platform_page(request: HttpRequest, pk: int) -> HttpResponse:
    _operator_only(request)
    registration = get_object_or_404(LtiRegistration, pk=pk)
    if request.method == "POST" and "active" in request.POST:
        _state_change(registration, request.POST)
        return redirect("lti:platform", pk=registration.pk)
    form = PlatformForm(request.POST or None, initial=PlatformForm.initial_of(registration), new=False)
    if request.method == "POST" and form.is_valid():
        try:
            registration_edit(registration=registration, spec=form.spec())
        except RegistrationError as exc:
            form.refuse(exc)
        else:
            return redirect("lti:platform", pk=registration.pk)
    return render(request, "lti/platform.html", _platform_context(registration, form),
                  status=400 if form.errors else 200)


def _platform_context(registration: LtiRegistration, form: PlatformForm) -> dict[str, Any]:
    bindings = (ContextCourse.objects.filter(context__deployment__registration=registration)
                .select_related("context__deployment", "course").order_by("context__id_on_platform")[:200])
    deployments = registration.deployments.select_related("last_launch").order_by("deployment_id")
    return {"registration": registration, "form": form, "deployments": deployments, "bindings": bindings}


def _state_change(registration: LtiRegistration, post: Any) -> None:
    deployment = None
    if post.get("deployment"):
        deployment = get_object_or_404(LtiDeployment, pk=post["deployment"] if str(post["deployment"]).isdigit()
                                       else 0, registration=registration)
    active_set(registration=registration, deployment=deployment, active=post.get("active") == "1")
