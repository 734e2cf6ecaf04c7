"""The preview's feedback space: for each part, the answer each typical mistake the engine
precomputed would give, and the message a student giving it would get.

- numeric: the mistake's answer at the seed point and the numeric diagnosis;
- formula: the engine gives no wrong formula, only each mistake's value at a point, so the value
  at the seed point is shown (labelled so) with the message a formula giving it there gets;
- code and choice: not precomputed (code is run at every point; choice feedback is the author's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assignments.models import Part
from chainrule import Analysis, diagnose_numeric
from chainrule.diagnosis.across_points import diagnose_points
from chainrule.model import Hypothesis

MAX_MISTAKES = 30
CODE_NOTE = ("Code parts have no precomputed feedback space: a student's code is run at every evaluation point "
             "and its values are diagnosed against the same typical mistakes of {keys}. Type a buggy solution "
             "in the trial box to see exactly what a student gets.")
CHOICE_NOTE = "Choice parts answer with the feedback you wrote for each option."


@dataclass(frozen=True)
class Mistake:
    answer: Any
    kind: str
    message: str


def numeric_mistakes(*, analysis: Analysis, part: Part) -> list[Mistake]:
    found = []
    for hypothesis in _listed(analysis, part.key):
        verdict = diagnose_numeric(analysis=analysis, part=part.key, answer=hypothesis.value, rel_tol=part.rel_tol,
                                   abs_tol=part.abs_tol, decimals=())  # the slip's exact value, not a print
        found.append(Mistake(answer=hypothesis.value, kind=_kind(hypothesis), message=verdict.message))
    return _distinct(found)


def _distinct(found: list[Mistake]) -> list[Mistake]:
    """One row per answer and message: two slips giving the same number are told alike, and the space
    listed that row twice."""
    seen: set[tuple[str, str]] = set()
    rows = []
    for mistake in found:
        key = (repr(mistake.answer), mistake.message)
        if key not in seen:
            seen.add(key)
            rows.append(mistake)
    return rows


def formula_mistakes(*, part: Part, analysis: Analysis, seed: dict[str, Any]) -> list[Mistake]:
    """Each mistake's value at the seed point and what a formula giving it there is told. A student's
    formula is checked at every evaluation point (the trial box shows that); running those points
    for every edit would triple the preview's time, so the space is drawn at the seed point."""
    of = str(part.config["of"])
    found = []
    for hypothesis in _listed(analysis, of):
        if hypothesis.value is None:
            continue  # "None" is no formula
        verdict = diagnose_points(analyses=[analysis], part=of, answers=[hypothesis.value], rel_tol=part.rel_tol,
                                  abs_tol=part.abs_tol, points=[seed], subject="formula")
        found.append(Mistake(answer=hypothesis.value, kind=_kind(hypothesis), message=verdict.message))
    return _distinct(found)


def code_note(*, part: Part) -> str:
    keys = part.config.get("returns") or part.config.get("reads") or []
    note = CODE_NOTE.format(keys=", ".join(keys) or "what it must produce")
    stated = part.code.requirements.sentences()
    if stated:  # the only grounds on which right values are refused, quoted to the student as written here
        note += f" Requirements stated for this part (right values that break one earn nothing): {'; '.join(stated)}."
    return note


def _listed(analysis: Analysis, key: str) -> list[Hypothesis]:
    return [h for h in analysis.hypotheses.get(key, [])[:MAX_MISTAKES] if not h.any_number]


def _kind(hypothesis: Hypothesis) -> str:
    return hypothesis.kind.replace("_", " ")
