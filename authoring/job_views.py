"""The page (or fragment) of one authoring job: it polls while a worker runs it, then shows the
preview, the import's outcome or the publish's (a version, or the reasons to justify). Thin: read
the job, render."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from assignments.access import course_for_staff_or_404
from assignments.models import AuthoringJob
from authoring.jobs import PENDING, WAIT, job_for_requester_or_404, job_overdue
from infra import clock

# While a job is pending only: soon at first (a preview takes a few hundred ms, vetting about a second),
# then less and less often (an import or a slow reference may take minutes).
POLL_MS = ((2.0, 100), (20.0, 500), (float("inf"), 2000))  # (job younger than s, poll every ms)


def poll_ms(job: AuthoringJob) -> int:
    """How soon the job's page asks again: sooner for a young job."""
    age = (clock.now() - job.created_at).total_seconds()
    return next(ms for younger_than, ms in POLL_MS if age < younger_than)


def job_context(job: AuthoringJob) -> dict[str, Any]:
    result = job.result or {}
    return {
        "job": job, "course": job.course, "pending": job.status in PENDING and not job_overdue(job=job),
        "overdue": job_overdue(job=job), "wait_seconds": int(WAIT[AuthoringJob.Kind(job.kind)].total_seconds()),
        "poll_ms": poll_ms(job), "job_error": result.get("error", ""), "preview": result.get("preview"),
        "form_errors": result.get("form_errors"), "data": job.payload.get("data"), "outcomes": result.get("outcomes"),
        "version": result.get("version"), "publish_warnings": result.get("warnings", []),
        "refused": result.get("refused"), "publish_errors": result.get("errors"),
        "justifications": job.payload.get("justifications", {}),
    }


@never_cache
@login_required
@require_safe
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = job_for_requester_or_404(user=request.user, pk=pk)
    course_for_staff_or_404(user=request.user, slug=job.course.slug, authoring=True)  # still an instructor
    template = "staff/_job.html" if request.headers.get("HX-Request") == "true" else "staff/job.html"
    return render(request, template, job_context(job))
