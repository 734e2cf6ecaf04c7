"""Diagnose a numeric answer against a precomputed Analysis: no torch, no
program run. The simplest hypothesis that reproduces the answer within
tolerance wins. It is stated alone; a second reading is told only where the
evidence supports it just as well (the same rank), with how to tell the two apart."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from chainrule.diagnosis.index import HypothesisIndex
from chainrule.diagnosis.messages import (
    FeedbackContext,
    correct_message,
    hypothesis_message,
    too_few_digits_message,
    unknown_message,
)
from chainrule.diagnosis.nearest_slip import nearest_slip, nearest_slip_text
from chainrule.diagnosis.two_mistakes import two_mistakes
from chainrule.model import Analysis, Highlight, Hypothesis, PartReference
from chainrule.values import (
    RaggedValue,
    Value,
    flatten,
    numbers_close,
    ordinal,
    printed_rounding,
    rounded_off,
    shape_of,
    shapes_compatible,
    values_match,
)

DEFAULT_REL_TOL = 1e-4
DEFAULT_ABS_TOL = 1e-6

# Simplest explanation first. Structural mismatches (None vs a number, a wrong
# shape) beat any value coincidence; accumulation beats missing_path because
# "4 instead of 8" is the accumulation lesson even though y = 4 too; a single
# missing path beats forward values (walkthrough: 4 = x² is also b's value).
PRIORITY = (
    "untracked_leaf",
    "shape",
    "accumulation",
    "missing_path",
    "extra_path",
    "sign_error",
    "product_of_paths",
    "dead_branch",
    "seed_vector",
    "wrong_local_derivative",  # a catalogued op mistake names a rule: before a coincidence with a forward value
    "forward_value",
    "other_gradient",  # another tensor's .grad: after a forward value, before a generic ×2 that equals it
    "generic_local_derivative",  # factor 1, sign, ×2, ÷2, transposed on some edge
    "missing_paths",  # missing_path with two or more paths: a less likely slip
    "two_mistakes",  # only when no single mistake fits
)


@dataclass
class Diagnosis:
    part: str
    correct: bool
    kind: str  # "correct", a hypothesis kind, or "unknown"
    paths: list[list[str]]
    message: str  # for the student: never contains the expected value
    also: list[str] = field(default_factory=list)  # other kinds that fit, less likely (data, never told)
    highlight: Highlight = field(default_factory=Highlight)
    expected: Value | dict[str, Value] = None  # for instructors (a dict for multi-gradient code parts)
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["highlight"] = {key: [list(edge) if isinstance(edge, tuple) else edge for edge in items]
                             for key, items in data["highlight"].items()}
        return data


# Ops whose local derivative is their own forward value: a factor forgotten below one leaves exactly
# a forward value (d e^(2x)/dx without the 2 is e^(2x) itself), and that is the likelier slip.
SELF_DERIVATIVE_OPS = frozenset({"exp"})
GENERIC_ORDER = ("generic_one", "generic_sign", "generic_transpose", "generic_double", "generic_half")


def hypothesis_rank(hypothesis: Hypothesis) -> tuple[int, int]:
    """Kinds by PRIORITY; within wrong local derivatives, catalogued op
    mistakes (they name the rule) before generic ones, factor 1 first."""
    kind = hypothesis.kind
    if kind == "missing_path" and len(hypothesis.paths) > 1:
        kind = "missing_paths"
    rule = str(hypothesis.detail.get("rule", ""))
    if kind == "wrong_local_derivative" and rule in GENERIC_ORDER:
        kind = "generic_local_derivative"
    structural = int(hypothesis.detail.get("family") == "structural")
    within = 2 + GENERIC_ORDER.index(rule) if rule in GENERIC_ORDER else structural
    return (PRIORITY.index(kind) if kind in PRIORITY else len(PRIORITY), within)


def hypothesis_index(analysis: Analysis, part: str) -> HypothesisIndex:
    index = analysis.match_indexes.get(part)
    if index is None:
        index = analysis.match_indexes[part] = HypothesisIndex.build(analysis.hypotheses.get(part, []))
    return index


def diagnose_numeric(
    *,
    analysis: Analysis,
    part: str,
    answer: Value,
    rel_tol: float = DEFAULT_REL_TOL,
    abs_tol: float = DEFAULT_ABS_TOL,
    decimals: Sequence[int] | None = None,
) -> Diagnosis:
    """`decimals`: each entry's decimals as the student wrote them (chainrule.values.text_decimals), for
    an answer pasted from torch's print; None reads them from the numbers; () never widens."""
    reference = analysis.parts.get(part)
    if reference is None:
        raise ValueError(f"the analysis has no part {part!r}")
    context = feedback_context(analysis, reference, answer)
    if values_match(answer, reference.value, rel_tol=rel_tol, abs_tol=abs_tol):
        return Diagnosis(part, True, "correct", [], correct_message(context), expected=reference.value)
    # Pasted from print(x.grad) (4 decimals): exact to what it shows, and so are the mistakes it is matched to.
    rounding, places = printed_rounding(answer, reference.value, decimals)
    if rounding > abs_tol:
        abs_tol = rounding
        # Right only if it is what torch shows: the reference rounded to those decimals (an entry off by one in
        # its last digit is not, however close: the relative tolerance is not added on top of the rounding).
        if values_match(answer, reference.value, rel_tol=0.0, abs_tol=abs_tol):
            message = f"{correct_message(context).rstrip('.')}, to the {places} decimals you wrote."
            return Diagnosis(part, True, "correct", [], message, expected=reference.value)
    fitting = sorted(hypothesis_index(analysis, part).fitting(answer, rel_tol=rel_tol, abs_tol=abs_tol),
                     key=hypothesis_rank)
    chosen = _structural(analysis, reference, answer, fitting) or most_specific(fitting)
    if chosen is None:
        chosen = two_mistakes(analysis.hypotheses.get(part, []), reference.value, answer, rel_tol=rel_tol,
                              abs_tol=abs_tol, rank=hypothesis_rank)
    if chosen is None:
        return _unknown(reference, answer, context, analysis, decimals)
    return _explained(reference, chosen, fitting, context)


def most_specific(fitting: list[Hypothesis]) -> Hypothesis | None:
    """The first fit, except that a sign flip or a path counted twice on exactly
    the paths through an edge whose catalogued mistake is itself a sign or a
    factor 2 (sin → -cos, √'s ½ forgotten) is better told as that edge's wrong
    local derivative: it names the factor to fix and the rule."""
    if not fitting:
        return None
    first = fitting[0]
    # A factor forgotten on one edge that equals another reading: dL/dw without its x is dL/db of w·x + b (any
    # such factor), e^(2x) for d e^(2x)/dx is z's forward value (a factor under exp, its own derivative).
    forgotten = [other for other in fitting if other.detail.get("rule") == "generic_one"]
    if first.kind == "other_gradient" and forgotten:
        return forgotten[0]
    under_exp = [other for other in forgotten if any(SELF_DERIVATIVE_OPS & set(path) for path in other.paths)]
    if first.kind == "forward_value" and under_exp:
        return under_exp[0]
    if first.kind == "sign_error" or (first.kind == "extra_path" and first.detail.get("reason") == "counted"):
        for other in fitting:
            if other.kind == "wrong_local_derivative" and not other.detail.get("generic") \
                    and sorted(other.paths) == sorted(first.paths):
                return other
    return first


def second_reading(chosen: Hypothesis, fitting: list[Hypothesis]) -> Hypothesis | None:
    """Another hypothesis the evidence supports exactly as well as the chosen one: it fits too and
    ranks the same (hypothesis_rank), and it names another mistake (another kind, path or edge).
    A reading the ranking puts below the chosen one is less likely and is not told; two slips at once
    are never offered as an equal alternative to one."""
    rank = hypothesis_rank(chosen)
    for other in fitting:
        if other is chosen or other.kind in ("two_mistakes", "combination") or hypothesis_rank(other) != rank:
            continue
        if (other.kind, sorted(other.paths), other.detail.get("edge")) == (
                chosen.kind, sorted(chosen.paths), chosen.detail.get("edge")):
            continue
        return other
    return None


def _explained(
    reference: PartReference, chosen: Hypothesis, fitting: list[Hypothesis], context: FeedbackContext
) -> Diagnosis:
    also = [kind for kind in dict.fromkeys(h.kind for h in fitting) if kind != chosen.kind]
    return Diagnosis(
        part=reference.key,
        correct=False,
        kind=chosen.kind,
        paths=chosen.paths,
        message=hypothesis_message(chosen, context, second_reading(chosen, fitting)),
        also=also,
        highlight=chosen.highlight,
        expected=reference.value,
        detail=chosen.detail,
    )


def _structural(
    analysis: Analysis, reference: PartReference, answer: Value, fitting: list[Hypothesis]
) -> Hypothesis | None:
    """None against a number, or a wrong shape: that is the feedback, whatever
    the numbers are (shape mismatches are feedback, never errors)."""
    if (answer is None) != (reference.value is None):
        found = [h for h in fitting if h.kind == "untracked_leaf"]
        reason = "tracked" if answer is None else "requires_grad_false"
        chosen = found[0] if found else Hypothesis(
            "untracked_leaf", None, [], Highlight(), {"reason": reason, "tensor": reference.tensor}
        )
        if chosen.detail.get("reason") == "tracked" and reference.is_leaf is False:  # kept by retain_grad()
            chosen = replace(chosen, detail={**chosen.detail, "reason": "retained"})
        return chosen
    if not shapes_compatible(_shape(answer), reference.shape):
        found = [h for h in fitting if h.kind == "shape"]
        non_scalar = [call.output for call in analysis.backward_calls if math.prod(call.output_shape) > 1]
        unsummed = {"reduction": "unsummed"} if _broadcast_copies(answer, reference) else {}
        return found[0] if found else Hypothesis(
            "shape", None, [], Highlight(nodes=[f"leaf:{reference.tensor}"]),
            {"shape": reference.shape, "non_scalar_outputs": list(dict.fromkeys(non_scalar)), **unsummed},
        )
    return None


def _broadcast_copies(answer: Value, reference: PartReference) -> bool:
    """The gradients of a broadcast tensor's copies, not yet added up: summed back to the tensor's shape
    (over the leading dimensions, and where the tensor has 1), the answer is right."""
    try:
        given, wanted = np.asarray(answer, dtype=float), list(reference.shape or [])
    except (TypeError, ValueError):
        return False
    if given.ndim < len(wanted) or given.size <= max(1, math.prod(wanted)) or reference.value is None:
        return False
    lead = given.ndim - len(wanted)
    summed = given.sum(axis=tuple(range(lead))) if lead else given
    if any(have != want and want != 1 for have, want in zip(summed.shape, wanted, strict=True)):
        return False
    summed = summed.sum(axis=tuple(i for i, want in enumerate(wanted) if want == 1 and summed.shape[i] != 1),
                        keepdims=True)
    return values_match(summed.reshape(wanted).tolist(), reference.value, rel_tol=1e-4, abs_tol=1e-6)


def _shape(value: Value) -> list[int] | None:
    try:
        return shape_of(value)
    except RaggedValue:
        return [-1]


def feedback_context(analysis: Analysis, reference: PartReference, answer: Value) -> FeedbackContext:
    return FeedbackContext(
        part=reference.key,
        tensor=reference.tensor,
        outputs=[call.output for call in analysis.backward_calls],
        leaf_paths=[path.names for path in analysis.paths.get(reference.tensor, [])],
        expected_shape=reference.shape,
        answer_shape=_shape(answer),
    )


def _unknown(reference: PartReference, answer: Value, context: FeedbackContext, analysis: Analysis,
             written: Sequence[int] | None = None) -> Diagnosis:
    expected = flatten(reference.value)
    given = flatten(answer)
    decimals = rounded_off(answer, reference.value, written)
    if decimals is not None:  # right, to fewer digits than the tolerance asks for: say so, not "no mistake fits"
        return Diagnosis(part=reference.key, correct=False, kind="unknown", paths=[],
                         message=too_few_digits_message(context, decimals),
                         highlight=Highlight(nodes=[f"leaf:{reference.tensor}"]), expected=reference.value,
                         detail={"decimals": decimals, "reason": "rounded"})
    difference = [a - e for a, e in zip(given, expected, strict=True)]
    nearest = nearest_slip(analysis.hypotheses.get(reference.key, []), given, expected)
    detail: dict[str, Any] = {"difference": difference[0] if len(difference) == 1 else difference}
    if nearest is not None:
        detail["closest_edge"] = nearest.detail.get("edge")
    return Diagnosis(
        part=reference.key,
        correct=False,
        kind="unknown",
        paths=context.leaf_paths,
        message=unknown_message(context, how_far(given, expected), nearest_slip_text(nearest) if nearest else ""),
        highlight=Highlight(nodes=[f"leaf:{reference.tensor}"],
                            wrong_edges=list(nearest.highlight.wrong_edges) if nearest else []),
        expected=reference.value,
        detail=detail,
    )


def how_far(given: list[float], expected: list[float]) -> str:
    """How wrong, in coarse words: enough to steer, not enough to reveal."""
    if len(expected) > 1:
        off = [i + 1 for i, (a, e) in enumerate(zip(given, expected, strict=True))
               if not numbers_close(a, e, rel_tol=DEFAULT_REL_TOL, abs_tol=DEFAULT_ABS_TOL)]
        if len(off) == len(expected):
            return f"All {len(expected)} entries are off."
        which = ", ".join(ordinal(i) for i in off)
        verb = "is" if len(off) == 1 else "are"
        return f"Of its {len(expected)} entries (in reading order), the {which} {verb} off; the others are right."
    answer, right = given[0], expected[0]
    if answer * right < 0:
        return "It even has the wrong sign."
    direction = "too large" if abs(answer) > abs(right) else "too small"  # in size: -0.04 for -0.218 is too small
    if right == 0:
        return f"It is {direction}."
    if answer == 0:  # 0 against 1 was "too small by more than 100 %"
        return "It is 0, where the gradient autograd computes is not."
    ratio = abs(answer - right) / abs(right)
    for limit, words in ((0.1, "by less than 10 %"), (0.5, "by 10 to 50 %"), (1.0, "by 50 to 100 %"),
                         (10.0, "by more than 100 %")):
        if ratio < limit:
            return f"It is {direction} {words}."
    return f"It is {direction} by more than ten times the gradient's size."
