"""Diagnose an answer given at several evaluation points (a formula evaluated,
or student code run, at each point) against the reference analysis of each.

One point can be ambiguous (at x = 2, y = 3 the answer 4 is both 2x and x²);
several cannot. A mistake explains the answer only if it does so at every
point, in this order: the simplest catalogued hypothesis (diagnose_numeric's
PRIORITY, wrong local derivatives aside), then an integer decomposition of the
residual over the path contributions, then one edge's wrong local derivative.
Anything else is `unknown`, with a table of the points for instructors."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from chainrule.diagnosis.decomposition import Problem, decompose, decomposition_columns, terms_hypothesis
from chainrule.diagnosis.messages import chain_rule, correct_message, hypothesis_message, paths_text
from chainrule.diagnosis.nearest_slip import nearest_slip_everywhere, nearest_slip_text
from chainrule.diagnosis.numeric import (
    Diagnosis,
    diagnose_numeric,
    feedback_context,
    how_far,
    hypothesis_rank,
    most_specific,
    second_reading,
)
from chainrule.diagnosis.subject_words import spoken_of
from chainrule.model import Analysis, Highlight, Hypothesis, PartReference
from chainrule.values import RaggedValue, Value, flatten, format_value, shape_of, shapes_compatible, values_match

MAX_LISTED_POINTS = 3
MAX_TABLE_ROWS = 20
Identity = tuple[Any, ...]


@dataclass
class PointEvidence:
    analyses: list[Analysis]
    part: str
    answers: list[Value]
    right: list[bool]
    rel_tol: float
    abs_tol: float

    @property
    def first_wrong(self) -> int:
        return self.right.index(False)

    def fits(self, hypothesis: Hypothesis, index: int) -> bool:
        return values_match(self.answers[index], hypothesis.value, rel_tol=self.rel_tol, abs_tol=self.abs_tol)

    def fits_at(self, candidates: list[Hypothesis], index: int) -> bool:
        """A hypothesis that predicts the right answer at a point is dropped
        from that point's analysis, so absence fits exactly a right answer."""
        if not candidates:
            return self.right[index]
        return any(self.fits(candidate, index) for candidate in candidates)


def diagnose_points(
    *,
    analyses: list[Analysis],
    part: str,
    answers: list[Value],
    rel_tol: float,
    abs_tol: float,
    points: list[dict[str, Any]] | None = None,
    subject: str | None = None,
) -> Diagnosis:
    """analyses[i] is the reference at point i and answers[i] the student's
    value there; `points` (the parameters of each point) only label messages.
    `subject` is what the student wrote, for the words: "formula" for a
    formula part, "dz_dx" for a function's return value (default: the part)."""
    found = _diagnose_points(analyses=analyses, part=part, answers=answers, rel_tol=rel_tol, abs_tol=abs_tol,
                             points=points)
    found.message = spoken_of(found.message, part=part, subject=subject)
    return found


def _diagnose_points(
    *,
    analyses: list[Analysis],
    part: str,
    answers: list[Value],
    rel_tol: float,
    abs_tol: float,
    points: list[dict[str, Any]] | None,
) -> Diagnosis:
    references = _references(analyses, part, answers, points)
    labels = points if points is not None else [{"point": index + 1} for index in range(len(analyses))]
    right = [values_match(a, r.value, rel_tol=rel_tol, abs_tol=abs_tol)
             for a, r in zip(answers, references, strict=True)]
    if all(right):
        return _correct(analyses[0], references[0], answers[0], len(right))
    structural = next((i for i, (a, r) in enumerate(zip(answers, references, strict=True)) if _mismatched(a, r)), None)
    if structural is not None:
        found = diagnose_numeric(analysis=analyses[structural], part=part, answer=answers[structural],
                                 rel_tol=rel_tol, abs_tol=abs_tol)
        found.detail = {**found.detail, "point": labels[structural], "points_checked": len(right)}
        return found
    evidence = PointEvidence(analyses, part, answers, right, rel_tol, abs_tol)
    chosen, also, second = explanation(evidence)
    if chosen is None:
        return _unknown(evidence, labels)
    return _explained(evidence, chosen, also, second)


def _references(
    analyses: list[Analysis], part: str, answers: list[Value], points: list[dict[str, Any]] | None
) -> list[PartReference]:
    if not analyses or len(analyses) != len(answers) or (points is not None and len(points) != len(answers)):
        raise ValueError("diagnose_points needs one analysis, one answer (and one point) per evaluation point")
    if any(part not in analysis.parts for analysis in analyses):
        raise ValueError(f"some analysis has no part {part!r}")
    return [analysis.parts[part] for analysis in analyses]


def _mismatched(answer: Value, reference: PartReference) -> bool:
    """None against a number, or a wrong shape: feedback of its own kind."""
    if (answer is None) != (reference.value is None):
        return True
    try:
        return not shapes_compatible(shape_of(answer), reference.shape)
    except RaggedValue:
        return True


def explanation(evidence: PointEvidence) -> tuple[Hypothesis | None, list[str], Hypothesis | None]:
    """The chosen hypothesis, the other kinds that also fit every point, and a second reading the
    evidence supports just as well (numeric.second_reading), if any."""
    fitting = hypotheses_fitting_everywhere(evidence)
    local = [h for h in fitting if h.kind == "wrong_local_derivative"]
    pairs = [h for h in fitting if h.kind == "two_mistakes"]  # only when no single mistake fits
    simple = [h for h in fitting if h.kind not in ("wrong_local_derivative", "two_mistakes")]
    chosen: Hypothesis | None = None
    if simple:
        chosen = most_specific(simple + local)
    elif (decomposed := _decomposed(evidence)) is not None:
        catalogued = [h for h in local if not h.detail.get("generic")]
        # One catalogued slip (the square's 2 dropped) beats several path slips that add up to it.
        chosen = catalogued[0] if decomposed.kind == "combination" and catalogued else most_specific(
            [decomposed, *local])
    elif local:
        chosen = local[0]
    elif pairs:
        chosen = pairs[0]
    also = [kind for kind in dict.fromkeys(h.kind for h in fitting) if chosen is None or kind != chosen.kind]
    return chosen, also, second_reading(chosen, fitting) if chosen is not None else None


def hypotheses_fitting_everywhere(evidence: PointEvidence) -> list[Hypothesis]:
    """Hypotheses of the first wrong point that, matched by identity, fit at
    every point; simplest first."""
    first = evidence.first_wrong
    by_point = [_by_identity(analysis.hypotheses.get(evidence.part, [])) for analysis in evidence.analyses]
    found = []
    for identity, candidates in by_point[first].items():
        representative = next((h for h in candidates if evidence.fits(h, first)), None)
        others = (i for i in range(len(by_point)) if i != first)
        if representative is not None and all(evidence.fits_at(by_point[i].get(identity, []), i) for i in others):
            found.append(representative)
    return sorted(found, key=hypothesis_rank)


def _by_identity(hypotheses: list[Hypothesis]) -> dict[Identity, list[Hypothesis]]:
    grouped: dict[Identity, list[Hypothesis]] = {}
    for hypothesis in hypotheses:
        if not hypothesis.any_number and hypothesis.value is not None:
            grouped.setdefault(hypothesis_identity(hypothesis), []).append(hypothesis)
    return grouped


def hypothesis_identity(hypothesis: Hypothesis) -> Identity:
    """The same mistake at another point: same kind, same paths, and the same
    detail apart from measured numbers (a seed vector, a factor's value)."""
    facts = sorted((key, _unnumbered(value)) for key, value in hypothesis.detail.items() if not _measured(value))
    return hypothesis.kind, tuple(tuple(path) for path in hypothesis.paths), tuple(facts)


NUMBER = re.compile(r"(?<![\w.])-?\d+(\.\d+)?(e[-+]?\d+)?")


def _unnumbered(value: Any) -> str:
    """A formula's words without the numbers in them: a Python-number parameter c is written by its value
    (the right factor "2.5" at one point, "3.1" at the next), and it is still the same slip on the same edge."""
    if isinstance(value, str):
        return NUMBER.sub("#", value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return repr([NUMBER.sub("#", item) for item in value])
    return repr(value)


def _measured(value: Any) -> bool:
    if isinstance(value, list):
        return any(_measured(item) for item in value)
    return isinstance(value, float)


def _decomposed(evidence: PointEvidence) -> Hypothesis | None:
    references = [analysis.parts[evidence.part] for analysis in evidence.analyses]
    problem = Problem(
        columns=decomposition_columns(evidence.analyses, evidence.part),
        expected=np.array([number for ref in references for number in flatten(ref.value)], dtype=float),
        answer=np.array([number for answer in evidence.answers for number in flatten(answer)], dtype=float),
        rel_tol=evidence.rel_tol,
        abs_tol=evidence.abs_tol,
    )
    if problem.expected.size != problem.answer.size:
        return None
    terms = decompose(problem)
    return terms_hypothesis(terms, evidence.analyses[evidence.first_wrong], evidence.part) if terms else None


def _explained(evidence: PointEvidence, chosen: Hypothesis, also: list[str], second: Hypothesis | None) -> Diagnosis:
    first = evidence.first_wrong
    analysis = evidence.analyses[first]
    reference = analysis.parts[evidence.part]
    context = feedback_context(analysis, reference, evidence.answers[first])
    wrong = evidence.right.count(False)
    message = hypothesis_message(chosen, context, second) + _coverage(len(evidence.right), wrong)
    detail = {**chosen.detail, "points_checked": len(evidence.right), "points_wrong": wrong}
    expected = evidence.analyses[0].parts[evidence.part].value
    return Diagnosis(evidence.part, False, chosen.kind, chosen.paths, message, also=also,
                     highlight=chosen.highlight, expected=expected, detail=detail)


def _correct(analysis: Analysis, reference: PartReference, answer: Value, count: int) -> Diagnosis:
    message = correct_message(feedback_context(analysis, reference, answer))
    if count > 1:
        message = message.removesuffix(".") + f" at all {count} points checked."
    return Diagnosis(reference.key, True, "correct", [], message, expected=reference.value,
                     detail={"points_checked": count})


def _coverage(count: int, wrong: int) -> str:
    if count == 1:
        return ""
    if wrong == count:
        return f" This explains your answer at all {count} points checked."
    return (f" This explains your answer at all {count} points checked: it is right at {count - wrong} of them, "
            "where this mistake makes no difference, and wrong at the others.")


def point_text(point: dict[str, Any], limit: int = 120) -> str:
    text = ", ".join(f"{name} = {format_value(value)}" for name, value in point.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _unknown(evidence: PointEvidence, labels: list[dict[str, Any]]) -> Diagnosis:
    part = evidence.part
    references = [analysis.parts[part] for analysis in evidence.analyses]
    wrong = [i for i, right in enumerate(evidence.right) if not right]
    listed = [f"At {_student_values(evidence.analyses[i], labels[i]) or point_text(labels[i])}: "
              f"{_lowered(_how_far(evidence.answers[i], references[i].value))}"
              for i in wrong[:MAX_LISTED_POINTS]]
    if len(wrong) > MAX_LISTED_POINTS:
        listed.append(f"It is also off at {len(wrong) - MAX_LISTED_POINTS} more points.")
    leaf_paths = [path.names for path in evidence.analyses[0].paths.get(references[0].tensor, [])]
    check = paths_text(leaf_paths) if leaf_paths else f"each path from {references[0].tensor}"
    by_point = [_by_identity(analysis.hypotheses.get(part, [])) for analysis in evidence.analyses]
    nearest = nearest_slip_everywhere(by_point, evidence.answers, [r.value for r in references], wrong)
    message = (f"Your {part} is not the gradient autograd computes at {len(wrong)} of the {len(references)} "
               f"points checked, and no typical mistake explains it at all of them. {' '.join(listed)}"
               f"{nearest_slip_text(nearest) if nearest else ''} Check {check}: {chain_rule(len(leaf_paths))}.")
    table = [{"point": labels[i], "expected": references[i].value, "got": evidence.answers[i]}
             for i in range(len(references))][:MAX_TABLE_ROWS]
    highlight = Highlight(nodes=[f"leaf:{references[0].tensor}"],
                          wrong_edges=list(nearest.highlight.wrong_edges) if nearest else [])
    detail: dict[str, Any] = {"table": table, "points_checked": len(references)}
    if nearest is not None:
        detail["closest_edge"] = nearest.detail.get("edge")
    return Diagnosis(part, False, "unknown", leaf_paths, message, highlight=highlight, expected=references[0].value,
                     detail=detail)


MAX_NAMED_LEAVES = 6


def _student_values(analysis: Analysis, point: dict[str, Any]) -> str:
    """The point in the program's own names (x = 1.2), not the parameters' (x0 = 1.2): a leaf is named by the
    program only while it holds its parameter's value (not w after an SGD step moved it, not a detached t,
    which no parameter is); a parameter no leaf holds (a Python number c) is named as it is."""
    # Tracked leaves first (the variables the student differentiates by), then named data; never an unnamed
    # constant of the program ("constant = 0" for 1 - y stood where w, the variable itself, was left out).
    named = [node for node in analysis.graph.nodes if node.kind == "leaf" and node.value is not None
             and node.name != "constant" and len(flatten(node.value)) <= MAX_NAMED_LEAVES]
    leaves = sorted(named, key=lambda node: not node.id.startswith("leaf:"))[:MAX_NAMED_LEAVES]
    shown, used = [], set()
    for node in leaves:
        held = next((name for name, value in point.items() if name not in used and _same_numbers(value, node.value)),
                    None)
        if held is not None:
            used.add(held)
            shown.append(f"{node.name} = {format_value(node.value)}")
    shown += [f"{name} = {format_value(value)}" for name, value in point.items() if name not in used]
    return ", ".join(shown[:MAX_NAMED_LEAVES])


def _same_numbers(left: Any, right: Any) -> bool:
    try:
        a, b = flatten(left), flatten(right)
    except (TypeError, ValueError):
        return False
    return len(a) == len(b) and all(abs(x - y) <= 1e-6 * max(1.0, abs(y)) for x, y in zip(a, b, strict=True))


def _how_far(answer: Value, expected: Value) -> str:
    given, right = flatten(answer), flatten(expected)
    return how_far(given, right) if len(given) == len(right) and right else "It is off."


def _lowered(sentence: str) -> str:
    return sentence[:1].lower() + sentence[1:]
