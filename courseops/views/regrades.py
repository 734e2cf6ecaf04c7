"""Regrade an assignment: preview (in the queue), review exactly whose scores change, apply."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from assignments.access import assignment_for_staff_or_404
from courseops.models import Regrade
from courseops.regrades import RegradeError, regrade_apply_start, regrade_request

SHOWN = 2000


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def regrade_list(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: earlier regrades; POST (instructors): start a preview."""
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=request.method == "POST")
    if request.method == "POST":
        regrade = regrade_request(assignment=assignment, by=request.user)
        return redirect("courseops-regrade", slug=slug, pk=regrade.id)
    return render(request, "staff/courseops/regrades.html", {
        "course": assignment.course, "assignment": assignment,
        "regrades": Regrade.objects.filter(assignment=assignment, submission=None)[:50]})


def _regrade(assignment_id: int, pk: int) -> Regrade:
    regrade = Regrade.objects.filter(id=pk, assignment_id=assignment_id).first()
    if regrade is None:
        raise Http404("No such regrade.")
    return regrade


@never_cache
@login_required
@require_http_methods(["GET"])
def regrade_detail(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug)
    regrade = _regrade(assignment.id, pk)
    score_changes = [c for c in regrade.changes if c["score_changed"]]
    template = "staff/courseops/_regrade.html" if request.headers.get("HX-Request") else "staff/courseops/regrade.html"
    return render(request, template, {
        "course": assignment.course, "assignment": assignment, "regrade": regrade,
        "score_changes": score_changes[:SHOWN], "score_change_count": regrade.score_change_count,
        "feedback_only": regrade.feedback_only_count, "shown": SHOWN,
        "pending": regrade.status in (Regrade.Status.PREVIEWING, Regrade.Status.APPLYING)})


@login_required
@require_POST
def regrade_apply_view(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug, authoring=True)
    regrade = _regrade(assignment.id, pk)
    try:
        regrade_apply_start(regrade_id=regrade.id)
        messages.success(request, "Applying the regrade in the queue; the old results are kept.")
    except RegradeError as exc:
        messages.error(request, str(exc))
    return redirect("courseops-regrade", slug=slug, pk=regrade.id)
