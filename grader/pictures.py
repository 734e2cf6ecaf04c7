"""The backward-flow picture of one graded submission, for the viewer asking.

Drawn from the variant's stored analysis and the highlight the worker stored, so
code is never re-run to draw it. What it shows follows the release level of the
result document (grader.selectors.release_of): an instructor of the course sees
it all; a student gets no picture below "picture"; at "picture" the gradients of
the parts this submission got right (they know those answers already) and nothing
that would give away the others, the right factor of a wrong edge included; from
"full_picture" on, all of it.
"""

from __future__ import annotations

from typing import Any

from assignments.models import Assignment, Part, Release, release_at_least
from assignments.part_config import reference_keys
from chainrule import Highlight, graph_svg
from chainrule.model import Edge
from chainrule.picture.disclosure import Disclosure
from chainrule.picture.words import graph_words
from grader.models import Submission
from grader.selectors import User, release_of
from grading.variants import variant_analysis


def picture_disclosure(*, submission: Submission, release: str) -> Disclosure | None:
    """What the picture of this submission may show at this release level (`release_disclosure`)."""
    document = getattr(submission, "result", None)
    correct = {part["part"] for part in (document.document.get("parts", []) if document else []) if part.get("correct")}
    return release_disclosure(release=release, assignment=submission.assignment, correct=correct)


def release_disclosure(*, release: str, assignment: Assignment, correct: set[str]) -> Disclosure | None:
    """What a picture may show at this release level: nothing below "picture"; at "picture" the keys
    read by the parts answered correctly (`correct`: their keys); everything from "full_picture" on."""
    if not release_at_least(release, Release.PICTURE):
        return None
    if release_at_least(release, Release.FULL_PICTURE):
        return Disclosure(everything=True)
    parts = Part.objects.filter(assignment=assignment, key__in=correct)
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


def _edge_notes(document_part: dict[str, Any] | None, highlight: Highlight, disclosure: Disclosure) -> dict[Edge, str]:
    """The factor the student used, on the one wrong edge the engine names, and the right one where the
    picture shows everything (before that the right factor would give the part away)."""
    diagnosis = (document_part or {}).get("diagnosis") or {}
    used, right = diagnosis.get("used"), diagnosis.get("right")
    if diagnosis.get("cut_as") == "clone":  # the student's clone() where the exercise detaches
        return {edge: "✗ clone() keeps the graph: gradient flows back here (detach() would stop it)"
                for edge in highlight.wrong_edges}
    if len(highlight.wrong_edges) != 1:
        return {}
    if used and right and disclosure.everything:
        return {highlight.wrong_edges[0]: f"✗ you used {used}; right: {right}"}
    if used:
        return {highlight.wrong_edges[0]: f"✗ you used {used} here"}
    if diagnosis.get("kind") == "wrong_local_derivative":
        return {highlight.wrong_edges[0]: "✗ wrong local derivative"}  # the picture adds the right one
    return {}


def _picture_inputs(*, submission: Submission, user: User, part: str | None) -> dict[str, Any] | None:
    """What the picture of `part` is drawn from (default: every wrong part highlighted at once), as the
    user's release level shows it.

    None when the submission is not graded, has no analysis, `part` was not answered, or the release
    level shows this user no picture.
    """
    disclosure = picture_disclosure(submission=submission, release=release_of(user=user, submission=submission))
    if disclosure is None:
        return None
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
            "disclosure": disclosure, "edge_notes": _edge_notes(document_part, highlight, disclosure),
            "title": _title(document_part, part)}


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
