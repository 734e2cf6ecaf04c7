"""Vetting before publishing: every reason an assignment would grade students badly.

Runs the reference at the seed point and a sample of student variants, and reads the
engine's precomputed typical mistakes (the Analysis hypotheses). Each reason has a stable
`code` so an instructor can accept it with a written justification (the UI, or
`[vetting] accept = {"<code>" = "why"}` in the catalog file).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from assignments.models import Assignment, Part
from authoring.policy_vetting import policy_reasons
from authoring.reasons import Reason
from chainrule import Analysis, diagnose_numeric
from chainrule.answers.code_requirements import reference_breaks
from chainrule.answers.formula_grading import grade_symbolic, numbers_suffice
from chainrule.diagnosis.numeric import DEFAULT_ABS_TOL, DEFAULT_REL_TOL, hypothesis_rank
from chainrule.evaluation_points import KINK_OPS, kinks_clear
from chainrule.values import PRINTED_DECIMALS, format_value, values_match
from grading.code_parts import code_part_diagnosis
from grading.reference import ReferenceRunError
from grading.variants import params_for_student, variant_analysis, variant_get, variant_points

SAMPLE_STUDENTS = (1, 2, 3)  # variants drawn as for these student ids
# Not a second single story for an ambiguity: a wrong local derivative of a product is some input's value by
# construction, and two mistakes at once are only diagnosed when no single mistake fits.
# another tensor's gradient may equal a mistake's number (y.grad = 2 = x itself in the walkthrough) without
# any feedback going wrong: both readings are told, and neither is the author's to avoid
NOT_SINGLE_KINDS = frozenset({"wrong_local_derivative", "two_mistakes", "other_gradient"})
SEEDED_RE = re.compile(r"(\w+)\.backward\((?!\s*\)|\s*retain_graph)(.+)\)\s*$", re.MULTILINE)
NOT_FINITE_RE = re.compile(r"AnalysisError: (\S+) is not finite")
NO_VARIABLE_RE = re.compile(r"defines no variable '([^']+)'")


def _reason(kind: str, field: str, problem: str) -> Reason:
    return Reason(code=f"{kind}:{field}", field=field, problem=problem)


def assignment_vet(*, assignment: Assignment) -> list[Reason]:
    """Every reason (deduplicated by code), seed point first. Runs the reference: call off the request
    path or where a preview would run it anyway."""
    reasons: list[Reason] = []
    for label, params in _sampled_params(assignment):
        try:
            variant = variant_get(assignment=assignment, params=params)
        except ReferenceRunError as exc:
            reasons.append(_reference_reason(str(exc), label))
            continue
        analysis = variant_analysis(variant=variant)
        reasons += _non_finite(analysis, label) + _undefined(analysis, label) + _ambiguous(assignment, analysis, label)
        if label == "the seed point":
            reasons += _trivial_numeric(assignment, analysis) + _default_seed(assignment, analysis)
            reasons += _printed_mistakes(assignment, analysis)
            reasons += _loose_tolerance(assignment, analysis) + _tight_tolerance(assignment, analysis)
            reasons += _point_checks(assignment, variant)
    reasons += policy_reasons(assignment=assignment)
    unique: dict[str, Reason] = {}
    for reason in reasons:
        unique.setdefault(reason.code, reason)
    return list(unique.values())


def _sampled_params(assignment: Assignment) -> list[tuple[str, dict[str, Any]]]:
    sampled = [("the seed point", dict(assignment.params))]
    for student in SAMPLE_STUDENTS if assignment.variant_ranges else ():
        params = params_for_student(assignment=assignment, student_id=student)
        if all(params != seen for _, seen in sampled):
            drawn = ", ".join(f"{name} = {params[name]}" for name in sorted(assignment.variant_ranges))
            sampled.append((f"a student variant ({drawn})", params))
    return sampled


def _reference_reason(error: str, label: str) -> Reason:
    missing = NO_VARIABLE_RE.search(error)
    if missing:
        name = missing.group(1)
        return _reason("no-tensor", f"parts.{name}", f"names no tensor of the reference program ({error})")
    infinite = NOT_FINITE_RE.search(error)
    if infinite:
        return _reason("non-finite", f"parts.{infinite.group(1)}",
                       f"the reference gives a non-finite value at {label} ({error})")
    return _reason("reference-fails", "reference", f"fails at {label}: {error}")


def _numbers(value: Any) -> list[float]:
    if isinstance(value, list):
        return [n for item in value for n in _numbers(item)]
    return [float(value)] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def _non_finite(analysis: Analysis, label: str) -> list[Reason]:
    return [
        _reason("non-finite", f"parts.{key}", f"the reference gives a non-finite value at {label}")
        for key, part in analysis.parts.items()
        if any(not math.isfinite(n) for n in _numbers(part.value))
    ]


def _undefined(analysis: Analysis, label: str) -> list[Reason]:
    if kinks_clear(analysis):
        return []
    return [_reason("undefined-gradient", "variants",
                    f"{label} puts the input of a ReLU-like node at its kink, where the gradient is undefined")]


def _numeric_parts(assignment: Assignment, analysis: Analysis) -> list[tuple[Part, Any]]:
    return [(p, analysis.parts[p.key]) for p in assignment.parts.all()
            if p.kind == Part.Kind.NUMERIC and p.key in analysis.parts and analysis.parts[p.key].value is not None]


def _trivial_numeric(assignment: Assignment, analysis: Analysis) -> list[Reason]:
    """0, 1, or the forward value of the leaf itself or of an output passing: the part does not test
    the chain rule. (Another node's value may rightly be the gradient: d(xy)/dx is y.)"""
    reasons = []
    for part, ref in _numeric_parts(assignment, analysis):
        candidates: list[tuple[Any, str]] = [(0.0, "the answer 0"), (1.0, "the answer 1")]
        candidates += [(node.value, f"the forward value of {node.tensor_name or node.name}")
                       for node in analysis.graph.nodes if node.value is not None
                       and (node.kind == "output" or (node.kind == "leaf" and node.name == ref.tensor))]
        for value, label in candidates:
            try:
                verdict = diagnose_numeric(analysis=analysis, part=part.key, answer=value,
                                           rel_tol=part.rel_tol, abs_tol=part.abs_tol, decimals=())
            except ValueError:
                continue
            if verdict.correct:
                reasons.append(_reason("trivial-answer", f"parts.{part.key}",
                                       f"{label} passes: choose values where it differs from the gradient"))
                break
    return reasons


def _printed_mistakes(assignment: Assignment, analysis: Analysis) -> list[Reason]:
    """A typical mistake that, printed to 4 decimals as torch shows it, passes as right (a value pasted
    from print() counts as exact to its decimals, chainrule.values.printed_rounding)."""
    reasons = []
    for part, _ref in _numeric_parts(assignment, analysis):
        for hypothesis in analysis.hypotheses.get(part.key, []):
            if hypothesis.value is None or hypothesis.any_number or hypothesis.kind == "two_mistakes":
                continue
            printed = _rounded(hypothesis.value, PRINTED_DECIMALS)  # what torch's print shows
            # A "mistake" equal to the right answer at full precision changes nothing (p·log p summed over a
            # normalised p: some edges' slips cancel); only one that the 4 decimals hide is a reason.
            printed_decimals = [PRINTED_DECIMALS] * len(_numbers(printed))  # as torch's fixed-point print writes
            if not _passes(analysis, part, hypothesis.value, ()) and _passes(analysis, part, printed, printed_decimals):
                reasons.append(_reason("printed-mistake-passes", f"parts.{part.key}",
                                       f"{_mistake_label(hypothesis)} prints as {printed!r}, as the right answer "
                                       "does: a student who pastes it is marked right; choose values where they "
                                       "differ in the first 4 decimals"))
                break
    return reasons


def _tolerance_words(part: Part) -> str:
    """The tolerance as the author set it: the one that differs from the default first."""
    words = []
    if part.abs_tol != DEFAULT_ABS_TOL:
        words.append(f"abs_tol = {part.abs_tol:g}")
    if part.rel_tol != DEFAULT_REL_TOL:
        words.append(f"rel_tol = {part.rel_tol:g}")
    return " and ".join(words) or f"rel_tol = {part.rel_tol:g}, abs_tol = {part.abs_tol:g}"


def _gap(value: Any, right: Any) -> float:
    pairs = list(zip(_numbers(value), _numbers(right), strict=False))
    return max((abs(a - b) for a, b in pairs), default=math.inf)


def _loose_tolerance(assignment: Assignment, analysis: Analysis) -> list[Reason]:
    """A tolerance under which a typical mistake's own answer passes as right: the student who makes it is
    told "correct". Refused with the likeliest such mistake and its value. (A mistake whose answer equals
    the right one at the default tolerance changes nothing: some slips cancel.)"""
    reasons = []
    for part, ref in _numeric_parts(assignment, analysis):
        if part.rel_tol <= DEFAULT_REL_TOL and part.abs_tol <= DEFAULT_ABS_TOL:
            continue
        passing = [h for h in analysis.hypotheses.get(part.key, [])
                   if h.value is not None and not h.any_number and h.kind != "two_mistakes"
                   and not values_match(h.value, ref.value, rel_tol=DEFAULT_REL_TOL, abs_tol=DEFAULT_ABS_TOL)
                   and _passes(analysis, part, h.value, ())]
        if not passing:
            continue
        first = min(passing, key=hypothesis_rank)
        closest = min(_gap(h.value, ref.value) for h in passing)
        more = len({repr(_rounded(h.value)) for h in passing}) - 1
        others = f" ({more} more typical mistake{'s' if more != 1 else ''} pass too)" if more > 0 else ""
        reasons.append(_reason("loose-tolerance", f"parts.{part.key}",
                               f"{_tolerance_words(part)} lets a typical mistake pass as right: "
                               f"{_mistake_label(first)} gives {format_value(first.value)} where the right answer "
                               f"is {format_value(ref.value)}{others}; a tolerance below {closest:.3g} tells them "
                               "apart"))
    return reasons


def _tight_tolerance(assignment: Assignment, analysis: Analysis) -> list[Reason]:
    """A warning, not a refusal: the right answer rounded to 4 decimals (what a student copies from a
    print or a calculator) is marked wrong under this part's tolerance. torch prints 4 decimals and such
    an answer counts as exact to them where torch's print looks so; a small value it prints as 4.5387e-04
    is not, and a student who rounds it to 0.0005 is told to give more digits."""
    reasons = []
    for part, ref in _numeric_parts(assignment, analysis):
        printed = _rounded(ref.value, PRINTED_DECIMALS)
        if _numbers(printed) == _numbers(ref.value):
            continue  # no more than 4 decimals: nothing is lost by rounding
        if _passes(analysis, part, printed, [PRINTED_DECIMALS] * len(_numbers(printed))):
            continue
        needed = 0.5 * 10.0 ** -PRINTED_DECIMALS
        reasons.append(Reason(code=f"tight-tolerance:parts.{part.key}", field=f"parts.{part.key}", warning=True,
                              problem=f"{_tolerance_words(part)} marks the right answer rounded to 4 decimals "
                                      f"({format_value(printed)}) wrong: a student who rounds so is told to give "
                                      f"more digits; set abs_tol = {needed:g} if 4 decimals should do"))
    return reasons


def _passes(analysis: Analysis, part: Part, answer: Any, decimals: Sequence[int]) -> bool:
    return diagnose_numeric(analysis=analysis, part=part.key, answer=answer, rel_tol=part.rel_tol,
                            abs_tol=part.abs_tol, decimals=decimals).correct


def _default_seed(assignment: Assignment, analysis: Analysis) -> list[Reason]:
    """A seeded backward whose default-seed mistake the engine could not tell from the right answer."""
    if not any(call.seed_given for call in analysis.backward_calls):
        return []
    return [
        _reason("default-seed", f"parts.{part.key}",
                "answering with the default seed (ones) passes: seed backward() with something other than ones")
        for part, _ref in _numeric_parts(assignment, analysis)
        if not any(h.kind == "seed_vector" for h in analysis.hypotheses.get(part.key, []))
    ]


def _mistake_label(hypothesis: Any) -> str:
    detail = hypothesis.detail
    if hypothesis.kind == "wrong_local_derivative" and isinstance(detail.get("edge"), list):
        edge = " → ".join(str(name) for name in detail["edge"])
        return f"using {detail.get('used')} instead of {detail.get('right')} as the local derivative on {edge}"
    if hypothesis.kind == "forward_value":
        return f"{detail.get('tensor') or detail.get('name')}'s forward value"
    if hypothesis.paths:
        shown = [" → ".join(p if len(p) <= 8 else [*p[:3], "…", *p[-2:]]) for p in hypothesis.paths[:2]]
        return f"{hypothesis.kind.replace('_', ' ')} " + "; ".join(shown)
    return hypothesis.kind.replace("_", " ")


def _ambiguous(assignment: Assignment, analysis: Analysis, label: str) -> list[Reason]:
    """Two different single typical mistakes giving the same answer: the feedback can name only one."""
    reasons = []
    for part, _ref in _numeric_parts(assignment, analysis):
        by_value: dict[str, list[Any]] = {}
        for hypothesis in analysis.hypotheses.get(part.key, []):
            if hypothesis.value is not None and not hypothesis.any_number and hypothesis.kind not in NOT_SINGLE_KINDS:
                by_value.setdefault(repr(_rounded(hypothesis.value)), []).append(hypothesis)
        for value, group in by_value.items():
            kinds = {h.kind for h in group}
            if len(kinds) > 1:
                named = list(dict.fromkeys(_mistake_label(h) for h in group))
                labels = " and ".join(named[:3]) + (f" (and {len(named) - 3} more)" if len(named) > 3 else "")
                reasons.append(_reason("ambiguous-mistakes", f"parts.{part.key}",
                                       f"at {label} the answer {value} is both {labels}: suggest other values, "
                                       "or accept the ambiguity"))
                break
    return reasons


def _rounded(value: Any, digits: int = 6) -> Any:
    if isinstance(value, list):
        return [_rounded(item, digits) for item in value]
    return round(float(value), digits)


def _point_checks(assignment: Assignment, variant: Any) -> list[Reason]:
    """Formula and code parts: constant formulas, kinks the points never cross, autograd in by-hand code."""
    parts = [p for p in assignment.parts.all() if p.kind in (Part.Kind.SYMBOLIC, Part.Kind.CODE)]
    if not parts:
        return []
    try:
        points, analyses = variant_points(variant=variant)
    except ReferenceRunError as exc:
        return [_reason("reference-fails", "reference", f"fails at the evaluation points: {exc}")]
    reasons = _kink_coverage(parts, analyses)
    for part in parts:
        if part.kind == Part.Kind.SYMBOLIC:
            reasons += _constant_formula(part, points, analyses)
        elif part.code.mode == "function" and not part.code.forbid_autograd:
            reasons += _autograd_passes(assignment, part, points, analyses)
        elif part.code.mode == "program" and SEEDED_RE.search(assignment.reference_program):
            reasons += _default_seed_passes(assignment, part, points, analyses)
        if part.kind == Part.Kind.CODE and part.code.mode != "function":
            broken = reference_breaks(part.code.requirements, assignment.reference_program)
            if broken:
                reasons.append(_reason("reference-breaks-requirement", f"parts.{part.key}",
                                       f"the reference program breaks this part's own requirement ({broken}): no "
                                       "right program could meet it; change config.backward_calls or config.forbid"))
    return reasons


def _default_seed_passes(assignment: Assignment, part: Part, points: list[dict[str, Any]],
                         analyses: list[Analysis]) -> list[Reason]:
    """A program part whose seeded backward also passes with the default seed (ones)."""
    source = SEEDED_RE.sub(lambda m: f"{m.group(1)}.backward(torch.ones_like({m.group(1)}))",
                           assignment.reference_program)
    try:
        verdict = code_part_diagnosis(part=part, source=source, points=points, analyses=analyses)
    except ReferenceRunError:
        return []
    if not verdict.correct:
        return []
    return [_reason("default-seed", f"parts.{part.key}",
                    "the default seed (ones) passes at every evaluation point: vary the seed (config.vary) "
                    "or seed with something other than ones")]


def _constant_formula(part: Part, points: list[dict[str, Any]], analyses: list[Analysis]) -> list[Reason]:
    for constant in ("0", "1"):
        verdict = grade_symbolic(text=constant, variables=part.symbolic.variables, analyses=analyses, points=points,
                                 part=part.symbolic.of, reference_formula=part.symbolic.formula,
                                 rel_tol=part.rel_tol, abs_tol=part.abs_tol, equivalence=numbers_suffice)
        if verdict.correct:
            return [_reason("trivial-answer", f"parts.{part.key}",
                            f"the constant formula {constant} passes at every evaluation point")]
    return []


def _kink_coverage(parts: list[Part], analyses: list[Analysis]) -> list[Reason]:
    """A kink whose input keeps one sign at every point: the answer is never tested across it."""
    signs: dict[str, set[bool]] = {}
    for analysis in analyses:
        values = {node.id: node.value for node in analysis.graph.nodes}
        kinks = {node.id: node.name for node in analysis.graph.nodes if node.kind == "op" and node.name in KINK_OPS}
        for edge in analysis.graph.edges:
            if edge.target in kinks:
                for n in _numbers(values.get(edge.source)):
                    signs.setdefault(f"{kinks[edge.target]} ({edge.target})", set()).add(n > 0)
    one_sided = [name for name, seen in signs.items() if len(seen) == 1]
    if not one_sided or len(analyses) < 2:
        return []
    return [_reason("kink-uncovered", f"parts.{part.key}",
                    f"the evaluation points keep the input of {', '.join(one_sided)} on one side of its kink: "
                    "widen the variant ranges or accept it") for part in parts]


def _autograd_passes(assignment: Assignment, part: Part, points: list[dict[str, Any]],
                     analyses: list[Analysis]) -> list[Reason]:
    try:
        verdict = code_part_diagnosis(part=part, source=autograd_solution(assignment, part), points=points,
                                      analyses=analyses)
    except ReferenceRunError:
        return []
    if not verdict.correct:
        return []
    return [_reason("autograd-passes", f"parts.{part.key}",
                    "a solution that calls .backward() passes this by-hand part: set config.forbid_autograd = true")]


def autograd_solution(assignment: Assignment, part: Part) -> str:
    """What a student who skips the exercise writes: the reference program wrapped in the function."""
    config = part.code
    body = "\n".join("    " + line for line in assignment.reference_program.strip().splitlines())
    returns = ", ".join(f"_plain({key})" for key in config.returns)
    returned = returns if len(config.returns) == 1 else f"({returns})"
    return (f"import torch\n\ndef _plain(t):\n    return t.tolist() if t is not None else None\n\n"
            f"def {config.function}({', '.join(config.args)}):\n{body}\n    return {returned}\n")
