"""The preview's feedback space: for each part, the answer each typical mistake the engine
precomputed would give, and the message a student giving it would get.

- numeric: the mistake's answer at the seed point and the numeric diagnosis;
- formula: the engine gives no wrong formula, only each mistake's value at a point, so the value
  at the seed point is shown (labelled so) with the message a formula giving it there gets;
- code and choice: not precomputed (code is run at every point; choice feedback is the author's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
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
    return _distinct(found, rel_tol=part.rel_tol, abs_tol=part.abs_tol)


def _distinct(found: list[Mistake], *, rel_tol: float, abs_tol: float) -> list[Mistake]:
    """One row per answer within the part's tolerance: a student typing 0.25465 gets one message, so
    0.25465 and 0.2546501 are one row (the first slip's message, every slip's kind)."""
    rows: list[Mistake] = []
    for mistake in found:
        same = next((i for i, row in enumerate(rows) if _close(row.answer, mistake.answer, rel_tol, abs_tol)), None)
        if same is None:
            rows.append(mistake)
        elif mistake.kind not in rows[same].kind.split(" or "):
            rows[same] = replace(rows[same], kind=f"{rows[same].kind} or {mistake.kind}")
    return rows


def _close(a: Any, b: Any, rel_tol: float, abs_tol: float) -> bool:
    """Equal within the tolerance a numeric answer is graded with, number by number for tensors."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, rel_tol, abs_tol) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
    return bool(a == b)


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
    return _distinct(found, rel_tol=part.rel_tol, abs_tol=part.abs_tol)


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
