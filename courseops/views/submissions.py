"""Staff views of submissions: the filterable list, one submission with everything, overrides."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from assignments.access import assignment_for_staff_or_404
from assignments.models import Release
from courseops.misconceptions import KIND_WORDS, kind_words
from courseops.models import Regrade, ResultRevision, ScoreOverride
from courseops.overrides import OverrideError, score_override_create
from courseops.regrades import regrade_request
from courseops.staff_access import submission_for_staff_or_404
from courseops.submission_lists import PAGE, SubmissionFilter, page_from, submissions_for_staff
from grader.models import Submission
from grader.selectors import result_document, submission_error


@login_required
@require_safe
def submission_list(request: HttpRequest, slug: str) -> HttpResponse:
    assignment = assignment_for_staff_or_404(user=request.user, slug=slug)
    wanted = SubmissionFilter.from_query(request.GET)
    page = page_from(request.GET)
    rows = submissions_for_staff(assignment=assignment, wanted=wanted, offset=(page - 1) * PAGE)
    return render(request, "staff/courseops/submissions.html", {
        "course": assignment.course, "assignment": assignment, "wanted": wanted, "rows": rows, "page": page,
        "more": len(rows) == PAGE, "parts": list(assignment.parts.values_list("key", flat=True)),
        "statuses": Submission.Status.values, "query": request.GET.urlencode(),
        "kinds": sorted({**KIND_WORDS, **({wanted.kind: kind_words(wanted.kind)} if wanted.kind else {})}.items(),
                        key=lambda item: item[1]),
    })


@login_required
@require_safe
def submission_page(request: HttpRequest, pk: int) -> HttpResponse:
    submission = submission_for_staff_or_404(user=request.user, pk=pk)
    return _submission_rendered(request, submission)


def _submission_rendered(request: HttpRequest, submission: Submission, *, typed: dict[str, str] | None = None,
                         status: int = 200) -> HttpResponse:
    """The page; `typed`: an override that was refused, shown again in its form with the message."""
    return render(request, "staff/courseops/submission.html", {
        "course": submission.assignment.course, "submission": submission, "assignment": submission.assignment,
        "document": result_document(submission=submission, release=Release.ANSWER_KEY),
        "error": submission_error(submission=submission, show_reason=True), "expected_shown": True,
        "picture_shown": True, "is_staff": True,
        "overrides": ScoreOverride.objects.filter(submission=submission).select_related("by"),
        "revisions": ResultRevision.objects.filter(submission=submission),
        "regrades": Regrade.objects.filter(submission=submission)[:5], "typed": typed or {},
        "code_shown": True,  # the page shows each code answer once, highlighted, above its feedback
    }, status=status)


@login_required
@require_POST
def override_create(request: HttpRequest, pk: int) -> HttpResponse:
    submission = submission_for_staff_or_404(user=request.user, pk=pk)
    try:
        score = float(request.POST.get("score", ""))
        score_override_create(submission_id=submission.id, part=request.POST.get("part", ""), score=score,
                              comment=request.POST.get("comment", ""), by=request.user)
        messages.success(request, "Score overridden; the student sees your comment.")
    except ValueError as exc:  # OverrideError, or a score that is not a number: the form again, as typed
        text = str(exc) if isinstance(exc, OverrideError) else "The score must be a number."
        messages.error(request, text)
        typed = {name: request.POST.get(name, "")[:2000] for name in ("part", "score", "comment")}
        return _submission_rendered(request, submission, typed=typed, status=400)
    return redirect("courseops-submission", pk=submission.id)


@login_required
@require_POST
def submission_regrade(request: HttpRequest, pk: int) -> HttpResponse:
    """Regrade this one submission alone, through the queue."""
    submission = submission_for_staff_or_404(user=request.user, pk=pk)
    if submission.status != Submission.Status.GRADED:
        messages.error(request, "Only a graded submission can be regraded.")
    else:
        regrade_request(assignment=submission.assignment, by=request.user, submission=submission)
        messages.success(request, "Regrade queued: reload in a moment to see the new result.")
    return redirect("courseops-submission", pk=submission.id)
