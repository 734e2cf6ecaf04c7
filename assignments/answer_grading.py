"""Grade one submission's answers and code against a variant's cached reference.

Shared by the `grade` command and the Celery worker, so both give the same verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assignments.choice_parts import choice_diagnosis, choice_parse
from assignments.code_parts import MAX_CODE_CHARS, code_parts_diagnoses
from assignments.code_syntax import code_syntax_problem
from assignments.formula_check import formula_equivalence_check
from assignments.models import Assignment, Part, Variant
from assignments.variants import variant_points
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
from chainrule.picture_labels import Reveal
from chainrule.symbolic_grading import grade_symbolic, reference_formula_problem
from chainrule.symbolic_parse import SymbolicError, parse_expression

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


def answers_parse(*, assignment: Assignment, answers: Mapping[str, Any], code: Mapping[str, Any]) -> None:
    """Raises AnswerErrors unless every answer and every piece of code can be graded."""
    parts = {part.key: part for part in assignment.parts.all()}
    if not answers and not code:
        raise AnswerErrors({"answers": f"Give at least one answer, e.g. {next(iter(parts), 'x.grad')}=7."})
    if len(answers) + len(code) > MAX_PARTS:
        raise AnswerErrors({"answers": f"At most {MAX_PARTS} answers per submission."})
    errors: dict[str, str] = {}
    for key, text in [*answers.items(), *code.items()]:
        try:
            _check_one(parts, key, text, as_code=key in code)
        except AnswerError as exc:
            errors[str(key)[:64]] = str(exc)
    if errors:
        raise AnswerErrors(errors)


def _check_one(parts: dict[str, Part], key: str, text: Any, *, as_code: bool) -> None:
    part = parts.get(key)
    if part is None:
        raise AnswerError(f"This assignment has no part {str(key)[:64]!r}; its parts are {', '.join(parts)}.")
    if not isinstance(text, str):
        raise AnswerError("The answer must be text, e.g. \"7\" or \"[2, 4, 6]\".")
    if (part.kind == Part.Kind.CODE) != as_code:
        where = "as code" if part.kind == Part.Kind.CODE else "as an answer, not as code"
        raise AnswerError(f"Part {key} is a {part.kind} part: submit it {where}.")
    if part.kind == Part.Kind.NUMERIC:
        parse_numeric(text)
    elif part.kind == Part.Kind.CHOICE:
        choice_parse(text, config=part.config)
    elif part.kind == Part.Kind.SYMBOLIC:
        _check_formula(part, text)
    else:
        _check_code(text)


def _check_formula(part: Part, text: str) -> None:
    try:
        parse_expression(text, variables=list(part.config["variables"]))
    except SymbolicError as exc:
        raise AnswerError(str(exc)) from None


def _check_code(source: str) -> None:
    if not source.strip():
        raise AnswerError("The code is empty.")
    if len(source) > MAX_CODE_CHARS:
        raise AnswerError(f"The code is longer than {MAX_CODE_CHARS} characters.")
    problem = code_syntax_problem(source)  # bounded cost: this runs in the web process
    if problem:
        raise AnswerError(problem)


def answers_grade(
    *, assignment: Assignment, variant: Variant, answers: Mapping[str, str], code: Mapping[str, str],
    show_expected: bool,
) -> Graded:
    """Diagnose every part; parts without an answer score zero.

    The variant's seed analysis must be computed; answers must pass answers_parse.
    Raises ReferenceError when the sandbox or the reference fails (infrastructure).
    """
    analysis = Analysis.from_json(variant.analysis_data())
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
        graded.append(GradedPart(diagnosis=diagnoses[part.key], answer=given, max_score=part.points))
    document = build_result(assignment=assignment.slug, parts=graded, show_expected=show_expected)
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
                                rel_tol=part.rel_tol, abs_tol=part.abs_tol)
    if part.kind == Part.Kind.CHOICE:
        return choice_diagnosis(key=part.key, text=given, config=part.config)
    points, analyses = variant_points(variant=variant)
    config = part.config
    diagnosis = grade_symbolic(text=given, variables=config["variables"], analyses=analyses, points=points,
                               part=config["of"], reference_formula=config.get("formula"),
                               rel_tol=part.rel_tol, abs_tol=part.abs_tol, equivalence=formula_equivalence_check)
    diagnosis.part = part.key
    return diagnosis


def _unanswered(part: Part) -> GradedPart:
    diagnosis = Diagnosis(part=part.key, correct=False, kind="unanswered", paths=[],
                          message="No answer was given for this part.")
    return GradedPart(diagnosis=diagnosis, answer="", max_score=part.points)


def graded_svg(*, analysis_data: dict[str, Any], graded: Graded) -> str:
    """The reference graph with every wrong part's path highlighted and all of its backward flow
    (the command shows the expected values too)."""
    return graph_svg(analysis=Analysis.from_json(analysis_data), highlight=wrong_highlight(graded.diagnoses),
                     reveal=Reveal(everything=True))


def wrong_highlight(diagnoses: Mapping[str, Diagnosis]) -> Highlight:
    return Highlight.merged(d.highlight for d in diagnoses.values() if not d.correct)


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


def formula_mismatches(*, assignment: Assignment, variant: Variant) -> list[tuple[str, str]]:
    """Symbolic parts whose authored reference formula disagrees with autograd at the points."""
    formulas = [p for p in assignment.parts.filter(kind=Part.Kind.SYMBOLIC) if p.config.get("formula")]
    if not formulas:
        return []
    points, analyses = variant_points(variant=variant)
    problems = []
    for part in formulas:
        problem = reference_formula_problem(
            formula=part.config["formula"], variables=part.config["variables"], analyses=analyses, points=points,
            part=part.config["of"], rel_tol=part.rel_tol, abs_tol=part.abs_tol)
        if problem:
            problems.append((f"parts.{part.key}.config.formula", problem))
    return problems
