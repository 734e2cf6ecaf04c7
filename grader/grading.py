"""Grade one set of answers against a variant's cached reference analysis.

Shared by the `grade` command and the Celery worker, so both give the same verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assignments.models import Assignment, Part
from chainrule import (
    Analysis,
    AnswerError,
    Diagnosis,
    GradedPart,
    Highlight,
    build_result,
    diagnose_numeric,
    graph_svg,
    parse_numeric,
)
from chainrule.values import Value

MAX_PARTS = 50


class AnswerErrors(ValueError):
    """Unreadable answers, keyed by part. Nothing is stored and no attempt is used."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{key}: {message}" for key, message in errors.items()))
        self.errors = errors


@dataclass(frozen=True)
class Graded:
    document: dict[str, Any]
    diagnoses: dict[str, Diagnosis]


def answers_parse(*, assignment: Assignment, answers: Mapping[str, Any]) -> dict[str, Value]:
    parts = {part.key: part for part in assignment.parts.all()}
    if not answers:
        raise AnswerErrors({"answers": f"Give at least one answer, e.g. {next(iter(parts), 'x.grad')}=7."})
    if len(answers) > MAX_PARTS:
        raise AnswerErrors({"answers": f"At most {MAX_PARTS} answers per submission."})
    errors: dict[str, str] = {}
    parsed: dict[str, Value] = {}
    for key, text in answers.items():
        try:
            parsed[key] = _parse_one(parts, key, text)
        except AnswerError as exc:
            errors[str(key)[:64]] = str(exc)
    if errors:
        raise AnswerErrors(errors)
    return parsed


def _parse_one(parts: dict[str, Part], key: str, text: Any) -> Value:
    part = parts.get(key)
    if part is None:
        raise AnswerError(f"This assignment has no part {str(key)[:64]!r}; its parts are {', '.join(parts)}.")
    if not isinstance(text, str):
        raise AnswerError("The answer must be text, e.g. \"7\" or \"[2, 4, 6]\".")
    if part.kind != Part.Kind.NUMERIC:
        raise AnswerError(f"Part {key} is a {part.kind} part and cannot be answered with a number here.")
    return parse_numeric(text)


def answers_grade(
    *, assignment: Assignment, analysis_data: dict[str, Any], answers: Mapping[str, str], show_expected: bool
) -> Graded:
    """Diagnose every part; parts without an answer score zero. Answers must parse (see answers_parse)."""
    analysis = Analysis.from_json(analysis_data)
    parsed = answers_parse(assignment=assignment, answers=answers)
    diagnoses = {
        part.key: diagnose_numeric(
            analysis=analysis, part=part.key, answer=parsed[part.key], rel_tol=part.rel_tol, abs_tol=part.abs_tol
        )
        for part in assignment.parts.all()
        if part.key in parsed
    }
    graded = [
        GradedPart(diagnosis=diagnoses[part.key], answer=answers[part.key], max_score=part.points)
        if part.key in diagnoses else _unanswered(part)
        for part in assignment.parts.all()
    ]
    document = build_result(assignment=assignment.slug, parts=graded, show_expected=show_expected)
    return Graded(document=document, diagnoses=diagnoses)


def _unanswered(part: Part) -> GradedPart:
    diagnosis = Diagnosis(part=part.key, correct=False, kind="unanswered", paths=[],
                          message="No answer was given for this part.")
    return GradedPart(diagnosis=diagnosis, answer="", max_score=part.points)


def graded_svg(*, analysis_data: dict[str, Any], graded: Graded) -> str:
    """The reference graph with every wrong part's path highlighted."""
    highlight = Highlight()
    for diagnosis in graded.diagnoses.values():
        if not diagnosis.correct:
            highlight.wrong_edges.extend(diagnosis.highlight.wrong_edges)
            highlight.missing_edges.extend(diagnosis.highlight.missing_edges)
            highlight.nodes.extend(diagnosis.highlight.nodes)
    return graph_svg(analysis=Analysis.from_json(analysis_data), highlight=highlight)


def expected_mismatches(*, assignment: Assignment, analysis: dict[str, Any]) -> list[tuple[str, str]]:
    """Parts whose authored `expected` value disagrees with what the reference computes."""
    parsed = Analysis.from_json(analysis)
    problems = []
    for part in assignment.parts.filter(kind=Part.Kind.NUMERIC).exclude(expected=None):
        value = part.expected["value"]
        verdict = diagnose_numeric(analysis=parsed, part=part.key, answer=value, rel_tol=part.rel_tol,
                                   abs_tol=part.abs_tol)
        if not verdict.correct:
            got = parsed.parts[part.key].value if part.key in parsed.parts else None
            problems.append((f"parts.{part.key}.expected", f"says {value!r} but the reference program gives {got!r}"))
    return problems
