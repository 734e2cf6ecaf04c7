"""Grading a stored submission again without touching it: what course operations preview and apply
when an assignment's reference or points change (courseops/regrades.py)."""

from __future__ import annotations

from typing import Any

from assignments.models import Variant
from grader.models import Submission
from grader.workflow.grade import graded
from grader.workflow.results import result_fields


def submission_regraded(*, submission: Submission) -> tuple[dict[str, Any], Variant]:
    """The Result fields grading this submission now would store, and the variant graded with.
    Writes nothing. Raises ReferenceRunError."""
    grade, variant = graded(submission=submission)
    return result_fields(submission=submission, graded=grade), variant
