"""Grade a symbolic part: the student's derivative formula (`y + 2x`) is read
safely, evaluated at every evaluation point and diagnosed there against the
gradients autograd computed (chainrule.diagnosis.across_points). When the author also gives
the derivative as a formula, SymPy must agree that the two are the same
function, so a formula that happens to match at the sampled points is still
wrong. Values come from the parsed tree in plain floats; SymPy runs only in the
`equivalence` check, which the grader runs in the sandbox (chainrule.answers.formula_job)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from chainrule.answers.formula_job import Equivalence
from chainrule.answers.formula_parse import Formula, SymbolicError, formula_value, parse_expression
from chainrule.diagnosis.across_points import MAX_LISTED_POINTS, diagnose_points, point_text
from chainrule.diagnosis.messages import ADD_RULE
from chainrule.diagnosis.numeric import Diagnosis
from chainrule.model import Analysis, Highlight
from chainrule.values import Value, values_match

Bound = dict[str, float | list[float]]  # symbol name → its value at one point


def grade_symbolic(
    *,
    text: str,
    variables: Mapping[str, str],
    analyses: list[Analysis],
    points: list[dict[str, Any]],
    part: str,
    reference_formula: str | None,
    rel_tol: float,
    abs_tol: float,
    equivalence: Equivalence,
) -> Diagnosis:
    """`variables` maps the names students type to parameters ({"x": "x0"}).
    Raises SymbolicError (with a message for the student) when the text cannot
    be read, ValueError when the part itself is misconfigured. `equivalence` is
    asked only when the numbers already agree; None from it means "too complex". The
    grader passes the sandboxed check; `numbers_suffice` trusts the numbers alone."""
    names = list(variables)
    answer = parse_expression(text, variables=names)
    bound = [bound_values(point, variables) for point in points]
    values = [value_at(answer, values) for values in bound]
    seen = [student_point(point, variables) for point in points]  # x = 2, never the parameter's x0 = 2
    undefined = [index for index, value in enumerate(values) if value is None]
    if undefined:
        return _undefined(part, analyses, [seen[index] for index in undefined])
    verdict = diagnose_points(analyses=analyses, part=part, answers=values, rel_tol=rel_tol, abs_tol=abs_tol,
                              points=seen, subject="formula")  # the student wrote a formula, not a .grad
    if reference_formula is not None and not verdict.correct and verdict.kind == "unknown":
        verdict = _variables_told(verdict, answer, _reference_expression(reference_formula, names))
    if reference_formula is None or not verdict.correct:
        return verdict  # a wrong number needs no proof: SymPy is never paid for it
    reference = _reference_expression(reference_formula, names)
    samples = [scalar for values in bound for scalar in _scalar_points(values)]
    equivalent = equivalence(answer, reference, names, samples)
    if equivalent is None:
        return _too_complex(verdict)
    return _with_equivalence(verdict, equivalent)


def _variables_of(expr: Formula) -> set[str]:
    found, stack = set(), [expr]
    while stack:
        node = stack.pop()
        if node.op == "variable" and isinstance(node.value, str):
            found.add(node.value)
        stack.extend(node.args)
    return found


def _variables_told(verdict: Diagnosis, answer: Formula, reference: Formula) -> Diagnosis:
    """A formula that leaves out a variable the gradient depends on: a number typed in its place (2.5 for
    c) is right at one value only, and 'no typical mistake explains it' did not say so."""
    missing = sorted(_variables_of(reference) - _variables_of(answer))
    if not missing:
        return verdict
    if answer.constant:
        said = (f"Your formula is a number: it gives the same value at every point, but the gradient changes with "
                f"{', '.join(missing)}. Write it in terms of {', '.join(sorted(_variables_of(reference)))}. ")
    else:
        which, them = (missing[0], "it") if len(missing) == 1 else (", ".join(missing), "them")
        said = (f"Your formula does not use {which}, but the gradient depends on {them}: a number typed in its "
                "place is right at that value only. ")
    return replace(verdict, message=said + verdict.message,
                   detail={**verdict.detail, "missing_variables": missing})


def numbers_suffice(answer: Formula, reference: Formula, variables: list[str],
                    points: list[dict[str, float]]) -> bool:
    """An `Equivalence` that asks no proof: agreeing at every point is enough (vetting's
    trivial-answer check, where passing the points is exactly the problem)."""
    return True


def student_point(point: Mapping[str, Any], variables: Mapping[str, str]) -> dict[str, Any]:
    """A point in the names the student types ({"x": 2}), not the parameter table's ({"x0": 2})."""
    return {symbol: point[param] for symbol, param in variables.items() if param in point}


def bound_values(point: Mapping[str, Any], variables: Mapping[str, str]) -> Bound:
    bound: Bound = {}
    for symbol, param in variables.items():
        if param not in point:
            raise ValueError(f"variable {symbol!r} refers to {param!r}, which is not a parameter")
        value = point[param]
        if _is_number(value):
            bound[symbol] = float(value)
        elif isinstance(value, list) and value and all(_is_number(item) for item in value):
            bound[symbol] = [float(item) for item in value]
        else:
            raise ValueError(f"parameter {param!r} must be a number or a flat list of numbers for a formula")
    return bound


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def value_at(expr: Formula, values: Bound) -> Value:
    """A float, or entrywise a list when some variable is a vector (scalars
    broadcast); None where the formula has no finite real value."""
    scalars = _scalar_points(values)
    if len(scalars) == 1 and not any(isinstance(value, list) for value in values.values()):
        return formula_value(expr, scalars[0])
    entries = [formula_value(expr, scalar) for scalar in scalars]
    return None if any(entry is None for entry in entries) else [float(entry) for entry in entries if entry is not None]


def _scalar_points(values: Bound) -> list[dict[str, float]]:
    sizes = {len(value) for value in values.values() if isinstance(value, list)}
    if len(sizes) > 1:
        raise ValueError("vector parameters of a formula must all have the same length")
    size = sizes.pop() if sizes else 1
    return [{name: value[i] if isinstance(value, list) else value for name, value in values.items()}
            for i in range(size)]


def _reference_expression(formula: str, names: list[str]) -> Formula:
    try:
        return parse_expression(formula, variables=names)
    except SymbolicError as error:
        raise ValueError(f"the reference formula cannot be read: {error}") from None


def _with_equivalence(verdict: Diagnosis, equivalent: bool) -> Diagnosis:
    verdict.detail = {**verdict.detail, "symbolic_equivalent": equivalent}
    if not verdict.correct and equivalent:
        verdict.detail["reference_formula_disagrees"] = True  # autograd decides; the author should look
    if not verdict.correct or equivalent:
        return verdict
    message = (f"Your formula for {verdict.part} agrees with autograd at the points checked, but it is not the "
               "same function as the derivative: it differs elsewhere. Derive it along the paths instead of "
               f"fitting numbers: {ADD_RULE}.")
    return Diagnosis(verdict.part, False, "unknown", [], message, expected=verdict.expected,
                     detail={**verdict.detail, "reason": "not_equivalent"})


def _too_complex(verdict: Diagnosis) -> Diagnosis:
    message = (f"Your formula for {verdict.part} gives the right numbers, but it is too complex to check that it "
               "is the same function as the derivative (the check ran out of its time or memory budget). "
               "Simplify it, for example by writing each path's product once, and submit again.")
    return Diagnosis(verdict.part, False, "unknown", [], message, expected=verdict.expected,
                     detail={**verdict.detail, "reason": "too_complex"})


def _undefined(part: str, analyses: list[Analysis], points: list[dict[str, Any]]) -> Diagnosis:
    """`points` in the student's names."""
    where = "; ".join(point_text(point) for point in points[:MAX_LISTED_POINTS])
    more = f" (and {len(points) - MAX_LISTED_POINTS} more points)" if len(points) > MAX_LISTED_POINTS else ""
    message = (f"Your formula for {part} has no finite real value at {where}{more}: it divides by zero or takes "
               "the log or square root of a negative number there. The gradient autograd computes exists at "
               "those points, so the derivative formula must too.")
    reference = analyses[0].parts[part] if analyses and part in analyses[0].parts else None
    highlight = Highlight(nodes=[f"leaf:{reference.tensor}"]) if reference else Highlight()
    return Diagnosis(part, False, "unknown", [], message, highlight=highlight,
                     expected=reference.value if reference else None,
                     detail={"reason": "undefined", "points": points[:MAX_LISTED_POINTS]})


def reference_formula_problem(
    *, formula: str, variables: Mapping[str, str], analyses: list[Analysis], points: list[dict[str, Any]],
    part: str, rel_tol: float, abs_tol: float,
) -> str | None:
    """For authors: None when the formula gives autograd's gradient at every
    point, else a message naming the first point where it does not."""
    expr = _reference_expression(formula, list(variables))
    for analysis, point in zip(analyses, points, strict=True):
        got = value_at(expr, bound_values(point, variables))
        expected = analysis.parts[part].value
        if got is None or not values_match(got, expected, rel_tol=rel_tol, abs_tol=abs_tol):
            return f"the reference formula {formula!r} gives {got} at {point_text(point)}; autograd gives {expected}"
    return None
