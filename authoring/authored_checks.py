"""Cross-checks of what an instructor typed against what the reference computes: an authored
`expected` value or reference `formula` that disagrees is refused at load and by vetting."""

from __future__ import annotations

from typing import Any

from assignments.models import Assignment, Part, Variant
from chainrule import Analysis, diagnose_numeric
from chainrule.answers.formula_grading import reference_formula_problem
from grading.variants import variant_points


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
    formulas = [p for p in assignment.parts.filter(kind=Part.Kind.SYMBOLIC) if p.symbolic.formula]
    if not formulas:
        return []
    points, analyses = variant_points(variant=variant)
    problems = []
    for part in formulas:
        problem = reference_formula_problem(
            formula=part.symbolic.formula or "", variables=part.symbolic.variables, analyses=analyses, points=points,
            part=part.symbolic.of, rel_tol=part.rel_tol, abs_tol=part.abs_tol)
        if problem:
            problems.append((f"parts.{part.key}.config.formula", problem))
    return problems


def authored_mismatches(*, assignment: Assignment, variant: Variant) -> list[tuple[str, str]]:
    """(field, problem) for every authored value the seed variant's reference contradicts.
    Raises ReferenceRunError when the reference fails at the evaluation points."""
    return (expected_mismatches(assignment=assignment, analysis=variant.analysis_data())
            + formula_mismatches(assignment=assignment, variant=variant))
