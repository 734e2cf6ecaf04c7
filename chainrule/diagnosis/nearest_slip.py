"""Where an unexplained answer and the reference seem to part ways: the one
wrong local derivative whose prediction comes much nearer the student's number
than the right gradient does (at every point checked, for several points).
Told as a guess where to start checking, never as the diagnosis. Numbers only."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from chainrule.diagnosis.slip_messages import edge_words
from chainrule.model import Hypothesis
from chainrule.values import Value, flatten

CLOSER = 0.25  # a slip counts as "nearest" when it removes at least 75 % of the error everywhere
Identity = Callable[[Hypothesis], Any]


def remaining_error(hypothesis: Hypothesis, given: list[float], expected: list[float]) -> float | None:
    """How much of the answer's distance from the reference is left under this slip (0 = it explains it)."""
    if hypothesis.kind != "wrong_local_derivative" or hypothesis.value is None or hypothesis.any_number:
        return None
    predicted = flatten(hypothesis.value)
    error = math.dist(given, expected) if len(given) == len(expected) else 0.0
    if len(predicted) != len(given) or error == 0.0:
        return None
    return round(math.dist(given, predicted) / error, 6)  # rounded: equal slips tie, then the catalogued wins


def nearest_slip(hypotheses: list[Hypothesis], given: list[float], expected: list[float]) -> Hypothesis | None:
    """At one point: the slip that leaves the least of the error, if it leaves under CLOSER of it."""
    scored = [(left, h) for h in hypotheses if (left := remaining_error(h, given, expected)) is not None]
    best = min(scored, key=lambda item: (item[0], _generic(item[1])), default=None)
    return best[1] if best is not None and best[0] < CLOSER else None


def nearest_slip_everywhere(
    by_point: Sequence[dict[Any, list[Hypothesis]]], answers: Sequence[Value], expected: Sequence[Value],
    wrong: Sequence[int],
) -> Hypothesis | None:
    """The same slip (by identity) nearest the answer at every wrong point, judged by its worst point."""
    if not wrong:
        return None
    best: tuple[float, Hypothesis] | None = None
    for identity, candidates in by_point[wrong[0]].items():
        worst = 0.0
        for index in wrong:
            here = by_point[index].get(identity, []) if index != wrong[0] else candidates
            left = [r for h in here if (r := remaining_error(h, flatten(answers[index]),
                                                              flatten(expected[index]))) is not None]
            worst = max(worst, min(left, default=math.inf))
        if worst < CLOSER and (best is None or (worst, _generic(candidates[0])) < (best[0], _generic(best[1]))):
            best = (worst, candidates[0])
    return best[1] if best is not None else None


def _generic(hypothesis: Hypothesis) -> bool:
    """On a tie (sin′ as -cos is also sin's output with the sign flipped), the catalogued slip names a rule."""
    return bool(hypothesis.detail.get("generic"))


def nearest_slip_text(hypothesis: Hypothesis) -> str:
    """Honest: a guess where to look, with the factor that would come close but not the right one."""
    return (f" A guess, not a diagnosis: your number comes closest to (but is not) what you would get with "
            f"{hypothesis.detail.get('used')} as the local derivative of {edge_words(hypothesis.detail)}. "
            "Start checking that edge.")
