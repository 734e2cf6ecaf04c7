"""Grade a code part from what the harness job reported (chainrule.code.harness),
outside the sandbox. The report is untrusted and validated first; student
code that fails becomes a `code_error` diagnosis with the harness's message
(it names the student's own line); code that runs is diagnosed at every
evaluation point by chainrule.diagnosis.across_points, one diagnosis per part.
A program or fix part is then judged by what the student's program does with
autograd (chainrule.answers.code_comparison); a function part's feedback speaks
of the values the student's function returns ("your dz_dx")."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from chainrule.answers.code_comparison import CodeEvidence, explained_failure, program_diagnosis
from chainrule.answers.code_report import HarnessOutput, MalformedOutput, PointOutput, validated_output
from chainrule.answers.code_requirements import Requirements, requirements_checked
from chainrule.answers.departures import departed_lines
from chainrule.answers.failure_lines import failure_lines
from chainrule.answers.source_facts import SourceFacts, return_names, signature_names, source_facts
from chainrule.answers.source_ops import told_of_the_program
from chainrule.answers.student_graph import error_cause_lines, failure_diagnosis, graph_diagnosis
from chainrule.answers.trace_report import MalformedTrace, ProgramTrace, validated_trace
from chainrule.diagnosis.across_points import diagnose_points, point_text
from chainrule.diagnosis.numeric import Diagnosis
from chainrule.model import Analysis
from chainrule.result import cause_lines
from chainrule.values import Value, ordinal, values_match

Point = dict[str, Any]


@dataclass(frozen=True)
class _Grading:
    output: HarnessOutput
    analyses: list[Analysis]
    points: list[Point]
    returns: Sequence[str | None] | None
    rel_tol: float
    abs_tol: float
    facts: SourceFacts
    subjects: dict[str, str]  # function mode: part → what the student calls that return value
    reference: ProgramTrace | None
    requirements: Requirements | None = None
    reference_source: str | None = None


def grade_code(
    *,
    harness_output: Any,
    analyses: list[Analysis],
    points: list[Point],
    parts: list[str],
    returns: Sequence[str | None] | None,
    rel_tol: float,
    abs_tol: float,
    reference_error: str | None = None,
    source: str | None = None,
    function: str | None = None,
    signature: str | None = None,
    requirements: Requirements | None = None,
    reference_source: str | None = None,
) -> dict[str, Diagnosis]:
    """Function mode: `returns[i]` is the part that the function's i-th return
    value answers (None for a value not graded). Program and fix mode:
    `returns` is None and each part (`x.grad`) is read by that name.
    `reference_error` is the exception type the reference itself raises at
    every point (then `analyses` may be empty): raising it is the answer.
    `source` is the student's code (its lines are quoted, its calls checked);
    `function` and `signature` name a function part's return values; `requirements` are what a
    program or fix part's config states (chainrule.answers.code_requirements); `reference_source` the
    exercise's program, read only to find the student's lines that depart from it."""
    if returns is not None and any(part not in returns for part in parts):
        raise ValueError("every graded part must be one of the function's return values")
    facts = source_facts(source) if source is not None else SourceFacts(())
    try:
        output = validated_output(harness_output, point_count=len(points),
                                  line_count=len(facts.lines) if source is not None else None)
    except MalformedOutput as problem:
        return {part: _malformed(part, analyses, str(problem)) for part in parts}
    if reference_error is not None:
        return {part: _compared_by_exception(part, output, points, reference_error) for part in parts}
    if not output.points:
        error = output.error or "Your code produced no results."
        return {part: _code_error(part, analyses, error, {}) for part in parts}
    grading = _Grading(output, analyses, points, returns, rel_tol, abs_tol, facts,
                       _subjects(returns, source or "", function, signature), _reference_trace(analyses),
                       requirements, reference_source)
    graded = {part: _graded_part(part, grading) for part in parts}
    intended = signature_names(signature, len(returns)) if returns is not None else []
    return _swaps_told(graded, grading, function, intended)


def _swaps_told(graded: dict[str, Diagnosis], grading: _Grading, function: str | None,
                intended: list[str | None]) -> dict[str, Diagnosis]:
    """Two wrong return values that are each other's right one at every point: `return dz_dw, dz_dx`
    for `return dz_dx, dz_dw` was told as two mistakes and an unknown."""
    returns = list(grading.returns or [])
    wrong = [part for part in returns if part in graded and not graded[part].correct
             and graded[part].kind != "code_error"]
    for first, second in itertools.combinations(wrong, 2):
        if _is_right_for(grading, given=first, wanted=second) and _is_right_for(grading, given=second, wanted=first):
            places = sorted((returns.index(first), returns.index(second)))
            # what the signature calls each return value (dz_dx), not the .grad of a float function that has none
            meant = {str(returns[i]): intended[i] or str(returns[i]) for i in places if i < len(intended)} or \
                {part: part for part in (first, second)}
            order = " and then ".join(meant.get(str(returns[index]), str(returns[index])) for index in places)
            for part, other in ((first, second), (second, first)):
                name = grading.subjects.get(part) or part
                own = f" ({name})" if name != part else ""
                message = (f"Your {ordinal(returns.index(part) + 1)} return value{own} is the right value for "
                           f"{meant.get(other, other)}, and the other way round, at every point checked: the two "
                           f"return values are swapped. {function or 'The function'} must return {order}, in that "
                           "order.")
                detail = {"reason": "swapped", "with": other, "tensor": other.removesuffix(".grad"), "where": "",
                          **({"subject": name} if part in grading.subjects else {})}
                graded[part] = Diagnosis(part, False, "other_gradient", [], message, expected=graded[part].expected,
                                         detail=detail)
    return graded


def _is_right_for(grading: _Grading, *, given: str, wanted: str) -> bool:
    key = str(list(grading.returns or []).index(given))
    for point, analysis in zip(grading.output.points, grading.analyses, strict=False):
        reference = analysis.parts.get(wanted)
        if reference is None or key not in point.values or not values_match(
                point.values[key], reference.value, rel_tol=grading.rel_tol, abs_tol=grading.abs_tol):
            return False
    return bool(grading.analyses) and len(grading.analyses) == len(grading.output.points)


def _subjects(returns: Sequence[str | None] | None, source: str, function: str | None,
              signature: str | None) -> dict[str, str]:
    if returns is None or function is None:
        return {}
    names = return_names(source, function=function, count=len(returns), signature=signature)
    fallback = [f"return value {index + 1} of {function}" if len(returns) > 1 else f"return value of {function}"
                for index in range(len(returns))]
    return {part: name or other for part, name, other in zip(returns, names, fallback, strict=True) if part}


def _reference_trace(analyses: list[Analysis]) -> ProgramTrace | None:
    if not analyses or not analyses[0].program_trace:
        return None
    try:
        return validated_trace(analyses[0].program_trace, line_count=None)
    except MalformedTrace:
        return None  # an analysis cached by another version: graded on the values alone


def _graded_part(part: str, grading: _Grading) -> Diagnosis:
    output, returns = grading.output, grading.returns
    key = part if returns is None else str(list(returns).index(part))
    failures = [(index, explained_failure(problem, point, grading.facts)) for index, point in enumerate(output.points)
                if (problem := _point_problem(point, key, part)) is not None]
    if failures:
        caused = None if returns is not None else failure_diagnosis(
            part, output.points, grading.facts, grading.reference, _expected(grading.analyses, part))
        if caused is not None:
            return caused
        failed = _failed_at_points(part, grading.analyses, grading.points, failures)
        lines = error_cause_lines(output.points, grading.facts) or failure_lines(output.points[failures[0][0]],
                                                                                   grading.facts)
        return replace(failed, detail={**failed.detail, "cause_lines": lines}) if lines else failed
    answers: list[Value] = [point.values[key] for point in output.points]
    if returns is not None and all(answer is None for answer in answers) and _expected(grading.analyses, part) \
            is not None:
        return _returned_none(part, grading)
    subject = grading.subjects.get(part)
    found = diagnose_points(analyses=grading.analyses, part=part, answers=answers, rel_tol=grading.rel_tol,
                            abs_tol=grading.abs_tol, points=grading.points, subject=subject)
    if subject is not None:
        found.detail = {**found.detail, "subject": subject}
    if returns is not None:
        return found
    evidence = CodeEvidence(part, answers, [point.trace for point in output.points], grading.reference,
                            grading.analyses[0] if grading.analyses else None, grading.facts)
    told = graph_diagnosis(found, program_diagnosis(found, evidence), evidence)  # a structural finding at its line
    told = told_of_the_program(told, grading.facts, grading.analyses, answers, (grading.rel_tol, grading.abs_tol))
    if not told.correct and told.kind != "code_error" and not cause_lines(told.detail) and grading.reference_source:
        departed = departed_lines("\n".join(grading.facts.lines), grading.reference_source)
        told = replace(told, detail={**told.detail, "cause_lines": departed}) if departed else told
    return requirements_checked(told, grading.requirements, grading.facts, evidence.traces)


def _returned_none(part: str, grading: _Grading) -> Diagnosis:
    """A function that gives None where a number is asked: a missing return (or a print in its place), not
    the autograd lesson about untracked tensors that a None for x.grad gets."""
    lines = grading.facts.lines
    returns_any = any(line.strip().startswith("return") for line in lines)
    prints = [number for number, line in enumerate(lines, 1) if "print(" in line]
    why = ("it has no return statement" if not returns_any else "a return that gives nothing back, or one that is "
           "never reached, makes it None")
    if prints and not returns_any:
        why += f", and line {prints[0]} prints the value instead: print only shows it"
    name = grading.subjects.get(part) or part
    message = (f"Your function gives None for {name} at every point checked: {why}. A function hands its result "
               "back with return.")
    return Diagnosis(part, False, "code_error", [], message, expected=_expected(grading.analyses, part),
                     detail={"error": message, "reason": "returned_none"})


def _point_problem(point: PointOutput, key: str, part: str) -> str | None:
    if point.error is not None:
        return point.error
    if key in point.unread:
        return point.unread[key]
    if key not in point.values:
        return f"Your code's result for {part} is missing."
    return None


def _failed_at_points(
    part: str, analyses: list[Analysis], points: list[Point], failures: list[tuple[int, str]]
) -> Diagnosis:
    index, problem = failures[0]
    if len(failures) == len(points) and all(other == problem for _, other in failures):
        return _code_error(part, analyses, problem, {"failed_points": len(failures)})
    others = f" It fails at {len(failures)} of the {len(points)} points checked." if len(failures) > 1 else ""
    message = f"At {point_text(points[index])}: {problem}{others}"
    return _code_error(part, analyses, message, {"point": points[index], "failed_points": len(failures)})


def _code_error(part: str, analyses: list[Analysis], message: str, detail: dict[str, Any]) -> Diagnosis:
    return Diagnosis(part, False, "code_error", [], message, expected=_expected(analyses, part),
                     detail={"error": message, **detail})


def _malformed(part: str, analyses: list[Analysis], problem: str) -> Diagnosis:
    message = ("The grader could not read the results of your code. Do not print to or replace the grading "
               "harness, and keep outputs small; then submit again.")
    return Diagnosis(part, False, "unknown", [], message, expected=_expected(analyses, part),
                     detail={"reason": "malformed_output", "problem": problem})


def _expected(analyses: list[Analysis], part: str) -> Value:
    reference = analyses[0].parts.get(part) if analyses else None
    return reference.value if reference is not None else None


def _compared_by_exception(part: str, output: HarnessOutput, points: list[Point], expected: str) -> Diagnosis:
    """The reference raises `expected` at every point; so must the student's code."""
    if not output.points:
        return _code_error(part, [], output.error or "Your code produced no results.", {})
    for index, point in enumerate(output.points):
        raised = point.raised
        if raised is None:
            message = (f"At {point_text(points[index])} your code runs without error, but autograd refuses this "
                       f"program: it raises {expected}. Find the operation autograd cannot allow.")
            return Diagnosis(part, False, "unknown", [], message, detail={"reason": "no_exception",
                                                                          "expected_exception": expected})
        if raised.type != expected:
            return _code_error(part, [], f"At {point_text(points[index])}: {raised.message}",
                               {"expected_exception": expected, "line": raised.line})
    message = f"Correct: your code raises {expected}, as autograd does for this program, at all {len(points)} points."
    return Diagnosis(part, True, "correct", [], message, detail={"expected_exception": expected})
