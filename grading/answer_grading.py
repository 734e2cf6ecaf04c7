"""Grade one submission's answers and code against a variant's cached reference.

Shared by the `grade` command, the Celery worker and the authoring preview, so all give the same verdict.
Answers must have passed grading.answer_parsing.answers_parse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assignments.models import Assignment, Part, Variant
from chainrule import (
    Analysis,
    Diagnosis,
    GradedPart,
    Highlight,
    build_result,
    diagnose_numeric,
    graph_svg,
    parse_numeric,
)
from chainrule.answers.formula_grading import grade_symbolic
from chainrule.picture.disclosure import Disclosure
from chainrule.values import text_decimals
from grading.choice_parts import choice_diagnosis
from grading.code_parts import code_parts_diagnoses
from grading.formula_check import formula_equivalence_check
from grading.part_answers import part_answer_text
from grading.variants import variant_analysis, variant_points


@dataclass(frozen=True)
class Graded:
    document: dict[str, Any]
    diagnoses: dict[str, Diagnosis]


def answers_grade(
    *, assignment: Assignment, variant: Variant, answers: Mapping[str, str], code: Mapping[str, str],
    expected_shown: bool,
) -> Graded:
    """Diagnose every part; parts without an answer score zero.

    The variant's seed analysis must be computed; answers must pass answers_parse.
    Raises ReferenceRunError when the sandbox or the reference fails (infrastructure).
    """
    analysis = variant_analysis(variant=variant)
    all_parts = list(assignment.parts.all())
    diagnoses = _code_diagnoses(parts=all_parts, code=code, variant=variant)
    graded: list[GradedPart] = []
    for part in all_parts:
        given = code.get(part.key) if part.kind == Part.Kind.CODE else answers.get(part.key)
        if given is None:
            graded.append(_unanswered(part))
            continue
        if part.key not in diagnoses:
            diagnoses[part.key] = _diagnose(part=part, given=given, analysis=analysis, variant=variant)
        graded.append(GradedPart(diagnosis=diagnoses[part.key], answer=given, max_score=part.points,
                                 per_gradient=part.kind == Part.Kind.CODE and part.code.partial))
    document = build_result(assignment=assignment.slug, parts=graded, expected_shown=expected_shown)
    for part, shown in zip(all_parts, document["parts"], strict=True):
        if "expected" in shown and part.kind in (Part.Kind.SYMBOLIC, Part.Kind.CODE, Part.Kind.CHOICE):
            shown["expected_text"] = part_answer_text(part, shown["expected"], variant.params)
    return Graded(document=document, diagnoses=diagnoses)


def _code_diagnoses(*, parts: list[Part], code: Mapping[str, str], variant: Variant) -> dict[str, Diagnosis]:
    """All answered code parts together: one sandbox job for the submission's code."""
    answered = [part for part in parts if part.kind == Part.Kind.CODE and part.key in code]
    if not answered:
        return {}
    points, analyses = variant_points(variant=variant)
    return code_parts_diagnoses(parts=answered, sources=dict(code), points=points, analyses=analyses)


def _diagnose(*, part: Part, given: str, analysis: Analysis, variant: Variant) -> Diagnosis:
    if part.kind == Part.Kind.NUMERIC:
        return diagnose_numeric(analysis=analysis, part=part.key, answer=parse_numeric(given),
                                rel_tol=part.rel_tol, abs_tol=part.abs_tol, decimals=text_decimals(given))
    if part.kind == Part.Kind.CHOICE:
        return choice_diagnosis(key=part.key, text=given, config=part.choice)
    points, analyses = variant_points(variant=variant)
    config = part.symbolic
    diagnosis = grade_symbolic(text=given, variables=config.variables, analyses=analyses, points=points,
                               part=config.of, reference_formula=config.formula,
                               rel_tol=part.rel_tol, abs_tol=part.abs_tol, equivalence=formula_equivalence_check)
    diagnosis.part = part.key
    return diagnosis


def _unanswered(part: Part) -> GradedPart:
    diagnosis = Diagnosis(part=part.key, correct=False, kind="unanswered", paths=[],
                          message="No answer was given for this part.")
    return GradedPart(diagnosis=diagnosis, answer="", max_score=part.points)


def graded_svg(*, analysis: Analysis, graded: Graded) -> str:
    """The reference graph with every wrong part's path highlighted and all of its backward flow
    (the command shows the expected values too)."""
    return graph_svg(analysis=analysis, highlight=wrong_highlight(graded.diagnoses),
                     disclosure=Disclosure(everything=True))


def wrong_highlight(diagnoses: Mapping[str, Diagnosis]) -> Highlight:
    return Highlight.merged(d.highlight for d in diagnoses.values() if not d.correct)
