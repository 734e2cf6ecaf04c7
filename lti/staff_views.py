"""Pages instructors reach from an LMS: bind a link, pick assignments to deep-link, see LMS sync."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_http_methods, require_POST
from lti_tool.models import LtiRegistration, LtiResourceLink

from assignments.access import course_for_staff_or_404, course_role
from assignments.models import Assignment, Course, Membership
from lti.account_links import (
    LinkRefused,
    account_link,
    linking_allow,
    linking_allowed,
    lms_accounts_of,
    roster_accounts_linkable,
)
from lti.course_start import course_is_empty, course_start_copy, start_sources
from lti.deep_linking import deep_link_response
from lti.framing import form_action_allow
from lti.launch import link_bind
from lti.models import ContextCourse, ScoreDelivery
from lti.nrps_sync import roster_sync_enqueue
from lti.scores import score_enqueue
from lti.views import refusal


def _staff_course(request: HttpRequest, course_id: int) -> Course:
    """The course of a pending LMS action: 404 unless staff of it, 403 for its students."""
    slug = Course.objects.filter(id=course_id).values_list("slug", flat=True).first() or ""
    return course_for_staff_or_404(user=request.user, slug=slug)


def _offered(course: Course) -> QuerySet[Assignment]:
    """What an LMS link may open: the course's published assignments, not the archived ones."""
    return course.assignments.filter(published=True, archived_at__isnull=True)


def _start_offer(request: HttpRequest, course: Course) -> list[Course] | None:
    """For the instructor of an empty course (as an LMS's first launch makes): the courses they may copy
    from; None when no copy is offered."""
    if course_role(user=request.user, course=course) != Membership.Role.INSTRUCTOR or not course_is_empty(
            course=course):
        return None
    return list(start_sources(user=request.user, course=course)[:50])


@login_required
@require_POST
def course_start_page(request: HttpRequest, slug: str) -> HttpResponse:
    """Fill an empty course with a copy of one of the instructor's courses or of the shipped catalog, then
    go back to the LMS page that offered it (picking a link's assignment, or deep linking)."""
    course = course_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    back = "lti:deep-link" if request.POST.get("return_to") == "deep-link" else "lti:bind"
    try:
        copied = course_start_copy(user=request.user, course=course, source=request.POST.get("source", ""))
    except ValueError as exc:
        return render(request, "lti/refused.html", {"reason": str(exc), "heading": "Nothing was copied",
                                                    "back": reverse(back)}, status=400)
    messages.success(request, f"Copied {copied} assignment{'s' if copied != 1 else ''} into {course.title}.")
    return redirect(back)


def _picked(request: HttpRequest, course: Course) -> list[Assignment]:
    slugs = request.POST.getlist("assignment")
    return list(_offered(course).filter(slug__in=slugs).prefetch_related("parts"))


def _pick_page(request: HttpRequest, *, pending_key: str, missing: str, title: str, action: str,
               multiple: Callable[[dict[str, Any]], bool],
               chosen: Callable[[dict[str, Any], list[Assignment]], HttpResponse | None]) -> HttpResponse:
    """A page where the course's staff pick assignments for what the LMS asked (kept in the session
    under `pending_key`); `chosen` answers a valid pick, or None to ask again."""
    pending = request.session.get(pending_key)
    if not pending:
        return refusal(request, missing)
    course = _staff_course(request, pending["course"])
    if request.method == "POST":
        answer = chosen(pending, _picked(request, course))
        if answer is not None:
            del request.session[pending_key]
            return answer
    context = {"course": course, "assignments": _offered(course), "multiple": multiple(pending),
               "action": reverse(action), "title": title, "return_to": action.removeprefix("lti:"),
               "start_sources": _start_offer(request, course)}
    return render(request, "lti/pick.html", context, status=400 if request.method == "POST" else 200)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def link_bind_page(request: HttpRequest) -> HttpResponse:
    def chosen(pending: dict[str, Any], picked: list[Assignment]) -> HttpResponse | None:
        if len(picked) != 1:
            return None
        resource_link = get_object_or_404(LtiResourceLink, pk=pending["resource_link"])
        link = link_bind(resource_link=resource_link, assignment=picked[0])
        return redirect("assignment", slug=link.assignment.slug)

    return _pick_page(request, pending_key="lti_bind", missing="Open this page from an LMS link.",
                      title="Which assignment does this LMS link open?", action="lti:bind",
                      multiple=lambda pending: False, chosen=chosen)


def _accepts_multiple(pending: dict[str, Any]) -> bool:
    return str(pending["settings"].get("accept_multiple", True)).lower() != "false"


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def deep_link_page(request: HttpRequest) -> HttpResponse:
    def chosen(pending: dict[str, Any], picked: list[Assignment]) -> HttpResponse | None:
        if not picked or (len(picked) > 1 and not _accepts_multiple(pending)):
            return None
        registration = get_object_or_404(LtiRegistration, pk=pending["registration"])
        return_url, token = deep_link_response(
            registration=registration, deployment_id=pending["deployment_id"], settings_claim=pending["settings"],
            assignments=picked, launch_url=request.build_absolute_uri(reverse("lti:launch")))
        page = render(request, "lti/deep_link_return.html", {"return_url": return_url, "jwt": token})
        return form_action_allow(page, urls=[return_url])  # the form posts the JWT back to the platform

    return _pick_page(request, pending_key="lti_deep_link",
                      missing="Open this page from the LMS's 'add content' dialog.",
                      title="Add assignments to the LMS course", action="lti:deep-link",
                      multiple=_accepts_multiple, chosen=chosen)


@xframe_options_exempt
@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def course_lms_page(request: HttpRequest, slug: str) -> HttpResponse:
    """Score deliveries (failed ones first) and roster syncs of a course, with buttons to retry; for its
    instructors, whether launches use matching roster accounts, and linking an LMS account by hand."""
    course = course_for_staff_or_404(user=request.user, slug=slug)
    notice, status = "", 200
    if request.method == "POST" and request.POST.get("accounts"):
        course_for_staff_or_404(user=request.user, slug=slug, authoring=True)  # instructors only
        notice, status = _accounts_change(course=course, post=request.POST)
        if status == 200:
            messages.success(request, notice)
            return redirect("lti:course", slug=course.slug)
    elif request.method == "POST":
        _retry(course=course, what=request.POST.get("retry", ""))
        return redirect("lti:course", slug=course.slug)
    deliveries = ScoreDelivery.objects.filter(link__assignment__course=course).select_related(
        "user", "link__assignment").order_by("status", "-updated_at")[:500]
    contexts = ContextCourse.objects.filter(course=course).select_related("context")
    context = {"course": course, "deliveries": deliveries, "contexts": contexts, "refusal": notice,
               "linking": linking_allowed(course=course), "lms_accounts": lms_accounts_of(course=course)[:500],
               "roster_accounts": roster_accounts_linkable(course=course)[:500],
               "instructor": course_role(user=request.user, course=course) == Membership.Role.INSTRUCTOR}
    return render(request, "lti/course.html", context, status=status)


def _accounts_change(*, course: Course, post: Any) -> tuple[str, int]:
    """The instructor's change on the accounts form: (what to tell them, 200 or 400)."""
    if post["accounts"] == "setting":
        allowed = post.get("link_roster_accounts") == "on"
        linking_allow(course=course, allowed=allowed)
        return ("Launches now use a matching roster account." if allowed
                else "Launches no longer look for a matching roster account."), 200
    ids = post.get("lms_account", ""), post.get("roster_account", "")
    if not all(value.isdigit() for value in ids):
        return "Choose an LMS account and a roster account to link.", 400
    try:
        return account_link(course=course, lms_account_id=int(ids[0]), roster_account_id=int(ids[1])), 200
    except LinkRefused as exc:
        return str(exc), 400


def _retry(*, course: Course, what: str) -> None:
    if what == "scores":
        rows = ScoreDelivery.objects.filter(link__assignment__course=course).exclude(status=ScoreDelivery.Status.SENT)
        for delivery_id in rows.values_list("id", flat=True)[:500]:
            ScoreDelivery.objects.filter(id=delivery_id).update(status=ScoreDelivery.Status.PENDING)
            score_enqueue(delivery_id)
    elif what == "roster":
        for row_id in ContextCourse.objects.filter(course=course).values_list("id", flat=True):
            roster_sync_enqueue(row_id)
