"""Staff home and course pages. Thin: each view reads through `assignments.access` or calls one service."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from assignments.access import course_for_staff_or_404, course_role, may_create_courses, staff_courses
from assignments.models import RELEASE_CHOICES, Membership
from assignments.selectors import by_title, staff_course_rows


@login_required
@require_safe
def staff_home(request: HttpRequest) -> HttpResponse:
    """The courses I teach or assist in, with my role in each."""
    rows = staff_course_rows(user=request.user)
    may_create = may_create_courses(user=request.user)
    if not rows and not may_create:
        raise PermissionDenied("You are not on the staff of any course.")
    return render(request, "staff/home.html", {"rows": rows, "may_create_courses": may_create})


@login_required
@require_safe
def course_detail(request: HttpRequest, course: str) -> HttpResponse:
    found = course_for_staff_or_404(user=request.user, slug=course)
    context: dict[str, object] = {
        "course": found, "role": course_role(user=request.user, course=found), "releases": RELEASE_CHOICES,
        "assignments": by_title(found.assignments.filter(archived_at=None)),
        "archived": found.assignments.exclude(archived_at=None).annotate(n_submissions=Count("submissions"))
        .order_by("-archived_at"),
        "can_author": staff_courses(user=request.user, authoring=True).filter(pk=found.pk).exists(),
        "staff": found.memberships.filter(role__in=[Membership.Role.INSTRUCTOR, Membership.Role.TA])
        .select_related("user").order_by("role", "user__username"),
    }
    context["may_copy"] = context["can_author"] and may_create_courses(user=request.user)  # a TA may not copy
    return render(request, "staff/course.html", context)
