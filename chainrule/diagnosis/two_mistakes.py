"""Two mistakes at once, tried only when no single one fits: a path-level slip
(a path left out, counted through a detach, sign-flipped, a kink ignored) and
one edge's wrong local derivative. Backward is linear, so when the two slips
sit on different paths the answer is the reference plus both differences.
(Two wrong local derivatives in series interact; the analysis measures those
pairs exactly.) Numbers only."""

from __future__ import annotations

from typing import Any

import numpy as np

from chainrule.model import Highlight, Hypothesis
from chainrule.values import Value, flatten

PATH_KINDS = ("missing_path", "extra_path", "sign_error", "dead_branch")
MAX_CELLS = 2_000_000  # candidates × candidates × entries compared at once
COMPONENT_KEYS = ("edge", "used", "right", "label", "lesson", "op", "rule", "slopes")


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


def two_mistakes(
    hypotheses: list[Hypothesis], expected: Value, answer: Value, *, rel_tol: float, abs_tol: float,
    rank: Any,
) -> Hypothesis | None:
    grad = np.asarray(flatten(expected), dtype=float)
    given = np.asarray(flatten(answer), dtype=float)
    if grad.size != given.size or grad.size == 0:
        return None
    ordered = sorted(hypotheses, key=rank)
    paths, first = _deltas([h for h in ordered if h.kind in PATH_KINDS], grad)
    local, second = _deltas([h for h in ordered if h.kind == "wrong_local_derivative"
                             and h.detail.get("rule") != "pair"], grad)
    if not paths or not local or len(paths) * len(local) * grad.size > MAX_CELLS:
        return None
    predicted = grad + first[:, None, :] + second[None, :, :]
    close = np.abs(given - predicted) <= abs_tol + rel_tol * np.abs(predicted)
    for i, j in np.argwhere(close.all(axis=2)):
        path, edge = paths[int(i)], local[int(j)]
        if edge.paths and all(p in path.paths for p in edge.paths) and path.kind == "missing_path":
            continue  # a slip on a path that is left out changes nothing
        value = (grad + first[i] + second[j]).tolist()
        joined = list(dict.fromkeys(tuple(p) for p in [*path.paths, *edge.paths]))
        highlight = Highlight(wrong_edges=[*path.highlight.wrong_edges, *edge.highlight.wrong_edges],
                              missing_edges=list(path.highlight.missing_edges))
        return Hypothesis("two_mistakes", value, [list(p) for p in joined], highlight,
                          {"mistakes": [component(path), component(edge)]})
    return None
