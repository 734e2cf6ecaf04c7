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
    per_gradient: bool = False  # the part's config asks for a share per gradient it reads (`partial = true`)


def part_score(graded: GradedPart, partial_credit: Mapping[str, float]) -> float:
    """Full marks when correct, and only then. A part that reads several gradients at once
    (detail["components"], e.g. grad_z returning two, or a program read for w.grad and x.grad)
    earns a share for each right one only where its config asks for it (`per_gradient`); every
    gradient it reads counts, one whose right value is None too. Otherwise the course's share for
    this kind of mistake (none by default: the feedback is the reward). Never full marks for a
    wrong part: a share is capped below the part's points."""
    if graded.diagnosis.correct:
        return graded.max_score
    components = graded.diagnosis.detail.get("components")
    if graded.per_gradient and isinstance(components, dict) and components:
        right = sum(1 for component in components.values() if component.get("correct"))
        share = right / len(components)
    else:
        share = partial_credit.get(graded.diagnosis.kind, 0.0)
    share = min(max(share, 0.0), 1.0)
    return round(graded.max_score * share, 6) if share < 1.0 else 0.0


def verdict(part: Mapping[str, Any]) -> str:
    """A part's verdict as a student reads it, from its document: "correct", "partly right" (a wrong
    part that earned some points: a share per right gradient, or a share set by the course or its
    staff), "credited" (a wrong part its staff gave full marks by an override) or "incorrect". Never
    "incorrect" beside points."""
    if part.get("correct"):
        return "correct"
    try:
        score, max_score = float(part.get("score") or 0.0), float(part.get("max_score") or 0.0)
    except (TypeError, ValueError):
        score, max_score = 0.0, 0.0
    if score > 0 and score >= max_score and part.get("override"):
        return "credited"
    return "partly right" if score > 0 else "incorrect"


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
    code = detail.get("code")
    if isinstance(code, Mapping) and code.get("finding") == "clone":  # the Path line names what the student wrote
        document["paths"] = [["clone" if name == "detach" else name for name in path] for path in diagnosis.paths]
        document["cut_as"] = "clone"
    if isinstance(detail.get("edge"), list) and diagnosis.kind in ("wrong_local_derivative", "dead_branch"):
        document["edge"] = list(detail["edge"])
    if diagnosis.kind == "unknown" and isinstance(detail.get("closest_edge"), list):
        document["edge"], document["guess"] = list(detail["closest_edge"]), True  # where to start checking
    if diagnosis.kind == "wrong_local_derivative":
        document["used"], document["right"] = detail.get("used"), detail.get("right")
    if diagnosis.kind == "two_mistakes" and isinstance(detail.get("mistakes"), list):
        document["mistakes"] = [dict(item) for item in detail["mistakes"]]
    lines = cause_lines(detail)
    if lines:
        document["lines"] = lines
    return document


def cause_lines(detail: Mapping[str, Any]) -> list[int]:
    """The student's source lines where a code answer's mistake is (its cause, not where an error
    surfaced): `cause_lines` where the comparison names them, else the one `line` it quotes, else
    the line a raised error points at."""
    found = detail.get("code")
    code: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    lines = detail.get("cause_lines", code.get("cause_lines"))  # a finding of the comparison carries its own
    if not isinstance(lines, list):
        lines = [detail.get("line", code.get("line"))]
    return sorted({n for n in lines if isinstance(n, int) and not isinstance(n, bool) and n > 0})


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
