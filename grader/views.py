"""Student-facing pages. Thin: each view reads with a selector or calls one service.

The assignment form posts with htmx when JavaScript runs (the answer is swapped in
place and its status fragment polls until graded) and as a plain form otherwise
(post, redirect, and a page that refreshes itself while grading runs).
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlparse

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_safe

from assignments.models import Release, release_at_least
from grader.finished import submission_waited
from grader.forms import ACCEPTED_FORMATS, AnswerForm
from grader.models import PENDING, Submission
from grader.policy import PolicyError
from grader.selectors import (
    HISTORY_LIMIT,
    AssignmentRow,
    assignment_row,
    assignment_rows,
    health_report,
    readiness_report,
    release_of,
    result_document,
    revealed_answer_key,
    submission_error,
    submission_visible,
    submissions_mine,
    viewer_is_staff,
)
from grader.workflow import submission_create
from grading.answer_parsing import AnswerErrors

PAGE_WAIT_S = 5.0  # a status poll waits this long for grading before answering "still pending"
POLL_MS = 300  # the page asks again this soon after a poll that waited
POLL_BUSY_MS = 2000  # … and this late after one that could not wait (the process's waiting slots were taken)


def _is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _row_or_404(request: HttpRequest, slug: str) -> AssignmentRow:
    row = assignment_row(user=request.user, slug=slug)
    if row is None:
        raise Http404("No such assignment in your courses.")
    return row


def _submission_or_404(request: HttpRequest, pk: int) -> Submission:
    submission = submission_visible(user=request.user, submission_id=pk)
    if submission is None:
        raise Http404("No such submission.")
    return submission


def _status_context(request: HttpRequest, submission: Submission) -> dict[str, Any]:
    staff = viewer_is_staff(user=request.user, submission=submission)
    release: str = Release.ANSWER_KEY if staff else Release.VERDICT
    if not staff and submission.status == Submission.Status.GRADED:  # a poll while pending reads no policy
        release = release_of(user=request.user, submission=submission)
    return {
        "submission": submission,
        "pending": submission.status in PENDING,
        "document": result_document(submission=submission, release=release),
        "error": submission_error(submission=submission, show_reason=staff),
        "expected_shown": release_at_least(release, Release.ANSWER_KEY),
        "picture_shown": release_at_least(release, Release.PICTURE),
        "is_staff": staff,
        "poll_ms": POLL_MS,
    }


@login_required
@require_safe
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "grader/home.html", {"rows": assignment_rows(user=request.user)})


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def assignment_detail(request: HttpRequest, slug: str) -> HttpResponse:
    row = _row_or_404(request, slug)
    if request.method == "POST":
        return _submit(request, row)
    latest = submissions_mine(user=request.user, assignment=row.assignment).first()
    form = AnswerForm(assignment=row.assignment, initial={**latest.answers, **latest.code} if latest else None)
    return _assignment_page(request, row, form=form, submission=latest)


def _submit(request: HttpRequest, row: AssignmentRow) -> HttpResponse:
    form = AnswerForm(request.POST, assignment=row.assignment)
    submission, refusal = None, ""
    if form.is_valid():
        try:
            submission = submission_create(student=request.user, assignment=row.assignment,
                                           answers=form.answers(), code=form.code())
        except AnswerErrors as exc:
            form.add_answer_errors(exc.errors)
        except PolicyError as exc:
            refusal = str(exc)
    if submission is not None and not _is_htmx(request):
        return redirect("submission", pk=submission.id)
    status = 200 if submission else 403 if refusal else 400
    row = assignment_row(user=request.user, slug=row.assignment.slug) or row  # attempts after this one
    return _assignment_page(request, row, form=form, submission=submission, refusal=refusal, status=status)


def _assignment_page(request: HttpRequest, row: AssignmentRow, *, form: AnswerForm, submission: Submission | None,
                     refusal: str = "", status: int = 200) -> HttpResponse:
    context = {"row": row, "assignment": row.assignment, "form": form, "refusal": refusal,
               "formats": ACCEPTED_FORMATS}
    if submission is not None:
        context.update(_status_context(request, submission))
    if _is_htmx(request):
        return render(request, "grader/_submit_response.html", context, status=status)
    context["answer_key"] = revealed_answer_key(row=row, user=request.user)
    return render(request, "grader/assignment.html", context, status=status)


@login_required
@require_safe
def assignment_history(request: HttpRequest, slug: str) -> HttpResponse:
    row = _row_or_404(request, slug)
    submissions = submissions_mine(user=request.user, assignment=row.assignment)[:HISTORY_LIMIT]
    return render(request, "grader/history.html", {"row": row, "assignment": row.assignment,
                                                   "submissions": submissions})


@login_required
@require_safe
def submission_detail(request: HttpRequest, pk: int) -> HttpResponse:
    submission = _submission_or_404(request, pk)
    return render(request, "grader/submission.html", _status_context(request, submission))


@never_cache
@login_required
@require_safe
def submission_status(request: HttpRequest, pk: int) -> HttpResponse:
    """The small fragment the page polls until the submission is graded. The request itself waits
    for grading (up to PAGE_WAIT_S), so the page shows the result the moment the worker has it."""
    submission = _submission_or_404(request, pk)
    started = time.monotonic()
    if submission.status in PENDING and submission_waited(submission_id=pk, seconds=PAGE_WAIT_S,
                                                          user_id=request.user.pk):
        submission = _submission_or_404(request, pk)
    context = _status_context(request, submission)
    if context["pending"] and time.monotonic() - started < PAGE_WAIT_S / 2:  # it could not wait: ask less often
        context["poll_ms"] = POLL_BUSY_MS
    polled_from = urlparse(request.headers.get("HX-Current-URL", "")).path
    if not context["pending"] and polled_from == reverse("assignment", args=[submission.assignment.slug]):
        context["row"] = assignment_row(user=request.user, slug=submission.assignment.slug)  # the header's score
    return render(request, "grader/_status_response.html", context)


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """Every dependency, named (an operator's look, not a load balancer's probe). The sandbox answers on
    its status channel, so a sandbox whose slots are all busy is still "ok"."""
    report = health_report()
    healthy = report["database"] == "ok" and report["broker"] == "ok" and report["sandbox"] in ("ok", "not used here")
    return JsonResponse(report, status=200 if healthy else 503)


@never_cache
@require_safe
def healthz_live(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers requests. Reads nothing, so a busy database or sandbox never gets
    a healthy process restarted."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_safe
def healthz_ready(request: HttpRequest) -> JsonResponse:
    """Readiness: this web process can take submissions (the database and the broker answer). The
    sandbox is left out: students' code may hold every slot, which is no reason to take the web tier
    out of the load balancer. At most one check per GRADER_READY_CACHE_S per process, and anonymous
    callers learn only ok or unavailable."""
    report = readiness_report()
    ready = all(state == "ok" for state in report.values())
    body: dict[str, object] = {"status": "ok" if ready else "unavailable"}
    if request.user.is_staff:
        body.update(report)
    return JsonResponse(body, status=200 if ready else 503)
