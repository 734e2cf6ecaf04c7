"""The backward-flow picture of one graded submission, for the viewer asking.

Drawn from the variant's stored analysis and the highlight the worker stored, so
code is never re-run to draw it. The gradients on it follow the reveal policy of
the result document: an instructor of the course sees them all, like `expected`,
and so does the student once the reveal policy shows them the expected answers;
before that a student sees those of the parts this submission got right (they
know those answers already) and nothing that would give away the others.
"""

from __future__ import annotations

from typing import Any

from assignments.models import Part
from assignments.part_config import reference_keys
from chainrule import Highlight, graph_svg
from chainrule.model import Edge
from chainrule.picture.disclosure import Disclosure
from chainrule.picture.words import graph_words
from grader.models import Submission
from grader.selectors import User, expected_shown
from grading.variants import variant_analysis


def picture_disclosure(*, submission: Submission, user: User) -> Disclosure:
    """What the picture may show this user: everything for an instructor of the course and for the
    student once the reveal policy shows the expected answers, else the keys read by the parts this
    submission answered correctly."""
    if expected_shown(user=user, submission=submission):
        return Disclosure(everything=True)
    document = getattr(submission, "result", None)
    correct = {part["part"] for part in (document.document.get("parts", []) if document else []) if part.get("correct")}
    parts = Part.objects.filter(assignment=submission.assignment, key__in=correct)
    return Disclosure(keys=frozenset(reference_keys([(p.key, p.kind_config) for p in parts])))


def _document_part(submission: Submission, part: str | None) -> dict[str, Any] | None:
    parts = submission.result.document.get("parts", [])
    return next((item for item in parts if item.get("part") == part), None)


def _title(document_part: dict[str, Any] | None, part: str | None) -> str | None:
    if document_part is None:
        return None
    if document_part.get("correct"):
        return f"How autograd got {part}"
    return f"Where {part} went wrong"


def _edge_notes(document_part: dict[str, Any] | None, highlight: Highlight) -> dict[Edge, str]:
    """The factor the student used and the right one, on the one wrong edge the engine names."""
    diagnosis = (document_part or {}).get("diagnosis") or {}
    used, right = diagnosis.get("used"), diagnosis.get("right")
    if diagnosis.get("cut_as") == "clone":  # the student's clone() where the exercise detaches
        return {edge: "✗ clone() keeps the graph: gradient flows back here (detach() would stop it)"
                for edge in highlight.wrong_edges}
    if len(highlight.wrong_edges) != 1:
        return {}
    if used and right:
        return {highlight.wrong_edges[0]: f"✗ you used {used}; right: {right}"}
    if diagnosis.get("kind") == "wrong_local_derivative":
        return {highlight.wrong_edges[0]: "✗ wrong local derivative"}  # the picture adds the right one
    return {}


def _picture_inputs(*, submission: Submission, user: User, part: str | None) -> dict[str, Any] | None:
    """What the picture of `part` is drawn from (default: every wrong part highlighted at once).

    None when the submission is not graded, has no analysis, or `part` was not answered.
    """
    if submission.status != Submission.Status.GRADED or submission.variant is None:
        return None
    if not submission.variant.is_ready or not hasattr(submission, "result"):
        return None
    per_part = submission.result.highlight.get("parts", {})
    if part is not None and part not in per_part:
        return None
    chosen = [per_part[part]] if part is not None else list(per_part.values())
    highlight = Highlight.merged(Highlight.from_json(data) for data in chosen)
    document_part = _document_part(submission, part) if part is not None else None
    return {"analysis": variant_analysis(variant=submission.variant), "highlight": highlight,
            "disclosure": picture_disclosure(submission=submission, user=user),
            "edge_notes": _edge_notes(document_part, highlight), "title": _title(document_part, part)}


def submission_picture(*, submission: Submission, user: User, part: str | None) -> str | None:
    """The SVG for `part` (default: every wrong part highlighted at once), or None (see _picture_inputs)."""
    inputs = _picture_inputs(submission=submission, user=user, part=part)
    return graph_svg(**inputs) if inputs is not None else None


def submission_picture_words(*, submission: Submission, user: User, part: str | None) -> dict[str, list[str]] | None:
    """The same picture in words (its text alternative), under the same disclosure."""
    inputs = _picture_inputs(submission=submission, user=user, part=part)
    if inputs is None:
        return None
    del inputs["title"]
    return graph_words(**inputs)
