"""Two mistakes at once, tried only when no single one fits: two path-level
slips (a path left out, counted through a detach, sign-flipped) or one of them
with one edge's wrong local derivative. Backward is linear, so slips on
different paths add to the reference. A wrong local derivative on the very
path another slip changes scales that slip by the edge's factor ratio (a ½
forgotten halves the detached path counted too), so the pair is predicted
exactly when the factor is a uniform multiple, and not guessed otherwise.
(Two wrong local derivatives in series are measured by the analysis.) Numbers only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from chainrule.model import Highlight, Hypothesis
from chainrule.values import Value, flatten

PATH_KINDS = ("missing_path", "extra_path", "sign_error", "dead_branch")
PAIRED_PATH_KINDS = ("missing_path", "extra_path", "sign_error")  # kink counterfactuals are not per path
MAX_CELLS = 2_000_000  # candidates × candidates × entries compared at once
COMPONENT_KEYS = ("edge", "used", "right", "label", "label_note", "lesson", "op", "rule", "slopes", "reason",
                  "times")
Rank = Callable[[Hypothesis], Any]
Pair = tuple[Hypothesis, Hypothesis, np.ndarray]  # the two slips and the answer they give together


def _deltas(hypotheses: list[Hypothesis], grad: np.ndarray) -> tuple[list[Hypothesis], np.ndarray]:
    kept, rows = [], []
    for hypothesis in hypotheses:
        if hypothesis.value is None or hypothesis.any_number:
            continue
        numbers = flatten(hypothesis.value)
        if len(numbers) == grad.size:
            kept.append(hypothesis)
            rows.append(np.asarray(numbers, dtype=float) - grad)
    return kept, np.asarray(rows, dtype=float).reshape(len(rows), grad.size)


def component(hypothesis: Hypothesis) -> dict[str, Any]:
    found = {"kind": hypothesis.kind, "paths": hypothesis.paths}
    return found | {key: hypothesis.detail[key] for key in COMPONENT_KEYS if key in hypothesis.detail}


def _whole(hypothesis: Hypothesis) -> bool:
    return hypothesis.kind == "sign_error" and bool(hypothesis.detail.get("whole"))


def _on_slip(path: Hypothesis, edge: Hypothesis) -> bool:
    """Does the edge lie on a path this slip changes?"""
    if path.kind == "extra_path":
        wrong = {tuple(item) for item in edge.highlight.wrong_edges}
        return any(tuple(item) in wrong for item in path.detail.get("route_edges", []))
    return any(p in edge.paths for p in path.paths)


def _combined(path: Hypothesis, edge: Hypothesis, grad: np.ndarray, first: np.ndarray,
              second: np.ndarray) -> np.ndarray | None:
    """The answer both slips give together, or None when it cannot be told from the two alone."""
    if _whole(path):
        return -(grad + second)  # the sign of the whole result, local slip included
    if not _on_slip(path, edge):
        return grad + first + second
    scale = edge.detail.get("scale")
    if len(path.paths) != 1 or not isinstance(scale, (int, float)):
        return None
    if path.kind == "missing_path" and all(p in path.paths for p in edge.paths):
        return None  # a slip on a path that is left out changes nothing
    return grad + second + float(scale) * first


def _close(given: np.ndarray, predicted: np.ndarray, rel_tol: float, abs_tol: float) -> bool:
    return bool(np.all(np.abs(given - predicted) <= abs_tol + rel_tol * np.abs(predicted)))


def _path_pairs(paths: list[Hypothesis], first: np.ndarray, grad: np.ndarray, given: np.ndarray,
                tol: tuple[float, float]) -> list[Pair]:
    """Two path slips on different paths (a detached path counted and another left out)."""
    usable = [i for i, h in enumerate(paths) if h.kind in PAIRED_PATH_KINDS and not _whole(h)]
    if len(usable) < 2 or len(usable) ** 2 * grad.size > MAX_CELLS:
        return []
    rows = first[usable]
    predicted = grad + rows[:, None, :] + rows[None, :, :]
    close = np.abs(given - predicted) <= tol[1] + tol[0] * np.abs(predicted)
    found = []
    for i, j in np.argwhere(close.all(axis=2)):
        a, b = paths[usable[int(i)]], paths[usable[int(j)]]
        if i < j and a.kind != b.kind and not {tuple(p) for p in a.paths} & {tuple(p) for p in b.paths}:
            found.append((a, b, predicted[i, j]))
    return found


def _path_local_pairs(paths: list[Hypothesis], first: np.ndarray, local: list[Hypothesis], second: np.ndarray,
                      grad: np.ndarray, given: np.ndarray,
                      tol: tuple[float, float]) -> list[Pair]:
    if len(paths) * len(local) * grad.size > MAX_CELLS:
        return []
    found = []
    for i, path in enumerate(paths):
        for j, edge in enumerate(local):
            predicted = _combined(path, edge, grad, first[i], second[j])
            if predicted is not None and _close(given, predicted, *tol):
                found.append((path, edge, predicted))
    return found


def _told_better(pair: Pair, found: list[Pair]) -> bool:
    """A path's sign flipped where an edge's catalogued mistake is that very flip (sin′ as -cos): the
    pair with the edge names the factor to fix (as most_specific does for one mistake)."""
    a, b, _ = pair
    for flipped, other in ((a, b), (b, a)):
        if flipped.kind != "sign_error" or other.kind == "wrong_local_derivative":
            continue
        if any(x is other and y.kind == "wrong_local_derivative" and not y.detail.get("generic")
               and sorted(y.paths) == sorted(flipped.paths) for x, y, _ in found):
            return True
    return False


def two_mistakes(
    hypotheses: list[Hypothesis], expected: Value, answer: Value, *, rel_tol: float, abs_tol: float,
    rank: Rank,
) -> Hypothesis | None:
    grad = np.asarray(flatten(expected), dtype=float)
    given = np.asarray(flatten(answer), dtype=float)
    if grad.size != given.size or grad.size == 0:
        return None
    ordered = sorted(hypotheses, key=rank)
    paths, first = _deltas([h for h in ordered if h.kind in PATH_KINDS], grad)
    local, second = _deltas([h for h in ordered if h.kind == "wrong_local_derivative"
                             and h.detail.get("rule") != "pair"], grad)
    tol = (rel_tol, abs_tol)
    found = _path_pairs(paths, first, grad, given, tol) + _path_local_pairs(paths, first, local, second, grad,
                                                                             given, tol)
    found = [item for item in found if not _told_better(item, found)]
    if not found:
        return None
    position = {id(h): index for index, h in enumerate(ordered)}
    # Path slips before local derivatives, catalogued local derivatives before generic ones.
    a, b, value = min(found, key=lambda item: (bool(item[1].detail.get("generic")),
                                               item[1].kind == "wrong_local_derivative",
                                               position[id(item[0])] + position[id(item[1])]))
    return _pair(a, b, value)


def _pair(a: Hypothesis, b: Hypothesis, value: np.ndarray) -> Hypothesis:
    joined = list(dict.fromkeys(tuple(p) for p in [*a.paths, *b.paths]))
    highlight = Highlight(wrong_edges=[*a.highlight.wrong_edges, *b.highlight.wrong_edges],
                          missing_edges=[*a.highlight.missing_edges, *b.highlight.missing_edges])
    return Hypothesis("two_mistakes", value.tolist(), [list(p) for p in joined], highlight,
                      {"mistakes": [component(a), component(b)]})
