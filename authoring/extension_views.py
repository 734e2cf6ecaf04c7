"""An assignment's extensions: give one, edit one (the form filled from it), remove one. A refused form
comes back with what was typed and the reason."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from assignments.access import assignment_for_staff_or_404
from assignments.models import Assignment, Extension
from authoring import publishing

FIELDS = ("username", "due_at", "extra", "reason")


def _typed(extension: Extension | None, assignment: Assignment) -> dict[str, Any]:
    """The form's values for an existing extension (the due date in the assignment's zone), else empty."""
    if extension is None:
        return {"username": "", "due_at": "", "extra": "0", "reason": ""}
    due = (timezone.localtime(extension.due_at, ZoneInfo(assignment.time_zone)).strftime("%Y-%m-%dT%H:%M")
           if extension.due_at else "")
    return {"username": extension.student.get_username(), "due_at": due, "extra": str(extension.extra_attempts),
            "reason": extension.reason}


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def assignment_extensions(request: HttpRequest, slug: str) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    extensions = Extension.objects.filter(assignment=assignment).select_related("student").order_by("student__username")
    post, error = request.POST, ""
    if "remove" in post:
        if publishing.extension_remove(assignment=assignment, username=post["remove"]):
            messages.success(request, f"Extension of {post['remove']} removed.")
        return redirect("staff-assignment-extensions", slug=slug)
    if request.method == "POST":
        typed = {name: post.get(name, "").strip() for name in FIELDS}
        try:
            publishing.extension_set(assignment=assignment, username=typed["username"], due_at=typed["due_at"],
                                     extra_attempts=typed["extra"] or "0", reason=typed["reason"])
        except ValueError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Extension of {typed['username']} saved.")
            return redirect("staff-assignment-extensions", slug=slug)
    else:
        editing = extensions.filter(student__username=request.GET.get("edit", "")).first()
        typed = _typed(editing, assignment)
    return render(request, "staff/extensions.html", {
        "assignment": assignment, "course": assignment.course, "extensions": extensions, "typed": typed,
        "error": error, "editing": bool(request.GET.get("edit")) and bool(typed["username"])},
        status=400 if error else 200)
