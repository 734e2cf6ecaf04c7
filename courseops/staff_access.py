"""Submission-level access for staff, on top of assignments.access (same 404/403 rule)."""

from __future__ import annotations

from django.http import Http404

from assignments.access import User, assignment_for_staff_or_404
from grader.models import Submission


def submission_for_staff_or_404(*, user: User, pk: int, authoring: bool = False) -> Submission:
    """The submission, when the user is staff of its course: 404 otherwise (403 for a student of it)."""
    submission = (Submission.objects.select_related("assignment__course", "student", "result", "variant")
                  .filter(id=pk).first())
    if submission is None:
        raise Http404("No such submission.")
    assignment_for_staff_or_404(user=user, slug=submission.assignment.slug, authoring=authoring)
    return submission
