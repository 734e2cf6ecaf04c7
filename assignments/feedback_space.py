"""The preview's feedback space: for each part, the answer each typical mistake the engine
precomputed would give, and the message a student giving it would get.

- numeric: the mistake's answer at the seed point and the numeric diagnosis;
- formula: the engine gives no wrong formula, only each mistake's value at every evaluation point,
  so the value at the seed point is shown (labelled so) with the message a formula taking those
  values everywhere gets; a mistake the engine finds at the seed point only says so;
- code and choice: not precomputed (code is run at every point; choice feedback is the author's).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from assignments.models import Part
from chainrule import Analysis, diagnose_numeric
from chainrule.model import Hypothesis
from chainrule.multipoint import diagnose_points

MAX_MISTAKES = 30
DETAIL_KEYS = ("node", "edge", "rule", "label", "reduction", "op")
CODE_NOTE = ("Code parts have no precomputed feedback space: a student's code is run at every evaluation point "
             "and its values are diagnosed against the same typical mistakes of {keys}. Type a buggy solution "
             "in the trial box to see exactly what a student gets.")
CHOICE_NOTE = "Choice parts answer with the feedback you wrote for each option."


@dataclass(frozen=True)
class Mistake:
    answer: Any
    kind: str
    message: str
    seed_only: bool = False  # formula parts: the engine found this mistake at the seed point only


def numeric_mistakes(*, analysis: Analysis, part: Part) -> list[Mistake]:
    found = []
    for hypothesis in _listed(analysis, part.key):
        verdict = diagnose_numeric(analysis=analysis, part=part.key, answer=hypothesis.value, rel_tol=part.rel_tol,
                                   abs_tol=part.abs_tol)
        found.append(Mistake(answer=hypothesis.value, kind=_kind(hypothesis), message=verdict.message))
    return found


def formula_mistakes(*, part: Part, points: list[dict[str, Any]], analyses: list[Analysis]) -> list[Mistake]:
    """`analyses[0]` is the seed point's (grader.variants.variant_points)."""
    of = str(part.config["of"])
    found = []
    for hypothesis in _listed(analyses[0], of):
        if hypothesis.value is None:
            continue  # "None" is no formula
        everywhere = [_matching(analysis, of, hypothesis) for analysis in analyses]
        if all(match is not None for match in everywhere):
            values = [match.value for match in everywhere if match is not None]
            verdict = diagnose_points(analyses=analyses, part=of, answers=values, rel_tol=part.rel_tol,
                                      abs_tol=part.abs_tol, points=points, subject="formula")
            found.append(Mistake(answer=hypothesis.value, kind=_kind(hypothesis), message=verdict.message))
            continue
        verdict = diagnose_points(analyses=analyses[:1], part=of, answers=[hypothesis.value], rel_tol=part.rel_tol,
                                  abs_tol=part.abs_tol, points=points[:1], subject="formula")
        found.append(Mistake(answer=hypothesis.value, kind=_kind(hypothesis), message=verdict.message,
                             seed_only=True))
    return found


def code_note(*, part: Part) -> str:
    keys = part.config.get("returns") or part.config.get("reads") or []
    return CODE_NOTE.format(keys=", ".join(keys) or "what it must produce")


def _listed(analysis: Analysis, key: str) -> list[Hypothesis]:
    return [h for h in analysis.hypotheses.get(key, [])[:MAX_MISTAKES] if not h.any_number]


def _kind(hypothesis: Hypothesis) -> str:
    return hypothesis.kind.replace("_", " ")


def _identity(hypothesis: Hypothesis) -> str:
    """The same mistake at another point: its kind, paths and what it names, not its numbers."""
    named = {key: hypothesis.detail.get(key) for key in DETAIL_KEYS}
    return json.dumps([hypothesis.kind, hypothesis.paths, named], sort_keys=True, default=str)


def _matching(analysis: Analysis, key: str, hypothesis: Hypothesis) -> Hypothesis | None:
    wanted = _identity(hypothesis)
    return next((h for h in analysis.hypotheses.get(key, []) if _identity(h) == wanted and h.value is not None), None)
