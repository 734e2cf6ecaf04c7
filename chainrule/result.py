"""The result document of SPEC §5, built from per-part diagnoses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chainrule.diagnosis.numeric import Diagnosis


@dataclass(frozen=True)
class GradedPart:
    diagnosis: Diagnosis
    answer: str  # exactly what the student typed
    max_score: float = 1.0
    graph_svg_url: str | None = None


def part_score(graded: GradedPart, partial_credit: Mapping[str, float]) -> float:
    """Full marks when correct; a part that answers several gradients at once
    (detail["components"], e.g. grad_z returning two) earns its share for each
    right one; otherwise the course's share for this kind of mistake (none by
    default: the feedback is the reward)."""
    if graded.diagnosis.correct:
        return graded.max_score
    components = graded.diagnosis.detail.get("components")
    if isinstance(components, dict) and components:
        # A gradient that should be None is right by doing nothing: it earns no share of its own.
        counted = [c for c in components.values() if c.get("expected") is not None] or list(components.values())
        right = sum(1 for component in counted if component.get("correct"))
        return round(graded.max_score * right / len(counted), 6)
    share = min(max(partial_credit.get(graded.diagnosis.kind, 0.0), 0.0), 1.0)
    return round(graded.max_score * share, 6)


def part_document(graded: GradedPart, *, score: float, expected_shown: bool) -> dict[str, Any]:
    diagnosis = graded.diagnosis
    document: dict[str, Any] = {
        "part": diagnosis.part,
        "correct": diagnosis.correct,
        "score": score,
        "max_score": graded.max_score,
        "answer": graded.answer,
        "diagnosis": diagnosis_document(diagnosis),
    }
    if graded.graph_svg_url is not None:
        document["graph_svg_url"] = graded.graph_svg_url
    if expected_shown:
        document["expected"] = diagnosis.expected
    return document


def diagnosis_document(diagnosis: Diagnosis) -> dict[str, Any]:
    """kind, paths, message; and the edge (with the used and right local
    derivative) or the two mistakes where the diagnosis has them. An unknown
    carries the edge whose slip comes closest, marked `"guess": true`."""
    document: dict[str, Any] = {"kind": diagnosis.kind, "paths": diagnosis.paths, "message": diagnosis.message}
    detail = diagnosis.detail
    if isinstance(detail.get("edge"), list) and diagnosis.kind in ("wrong_local_derivative", "dead_branch"):
        document["edge"] = list(detail["edge"])
    if diagnosis.kind == "unknown" and isinstance(detail.get("closest_edge"), list):
        document["edge"], document["guess"] = list(detail["closest_edge"]), True  # where to start checking
    if diagnosis.kind == "wrong_local_derivative":
        document["used"], document["right"] = detail.get("used"), detail.get("right")
    if diagnosis.kind == "two_mistakes" and isinstance(detail.get("mistakes"), list):
        document["mistakes"] = [dict(item) for item in detail["mistakes"]]
    return document


def build_result(
    *,
    assignment: str,
    parts: Sequence[GradedPart],
    expected_shown: bool = False,
    partial_credit: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    credit = partial_credit or {}
    scores = [part_score(graded, credit) for graded in parts]
    return {
        "assignment": assignment,
        "score": round(sum(scores), 6),
        "max_score": round(sum(graded.max_score for graded in parts), 6),
        "parts": [
            part_document(graded, score=score, expected_shown=expected_shown)
            for graded, score in zip(parts, scores, strict=True)
        ],
    }


def counted_score(document: Mapping[str, Any]) -> float:
    """The score that counts — what the student is shown, the gradebook sums, the LMS receives: the
    parts' scores (as graded, or as an instructor overrode them) times the document's late factor.
    The one definition: the worker stores it as the Result's score and overrides recompute it with it."""
    return round(float(document["score"]) * float(document.get("late_factor", 1.0)), 6)
