"""Integer decomposition of a wrong answer over the chain-rule paths.

At every evaluation point the residual (answer − gradient) is written as a sum
of whole path contributions with small integer coefficients: −1 for a path
left out, −2 for a path whose sign is flipped, +1/+2 for a path counted twice
or three times, and +1 for a path that is cut (detach) or dead (a ReLU that
saw a negative) but was counted anyway. Stacking all points makes the answer
unambiguous where one point is not: 4 = 2x at x = 2 could be anything, but
2x at six random points is the x·y path left out."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations, product
from math import comb
from typing import Any

import numpy as np

from chainrule.model import Analysis, Edge, Highlight, Hypothesis
from chainrule.values import Value, flatten

COEFFICIENTS = {"path": (-1, -2, 1, 2), "cut": (1,), "dead": (1,)}
MAX_TERMS = 3
MAX_CANDIDATES = 5_000  # per number of terms (about 10 µs each); beyond that, rounded least squares only
ZERO_COLUMN = 1e-12


@dataclass(frozen=True)
class Column:
    """One path's contribution at every point, stacked like the residual."""

    role: str  # "path" (a reference path), "cut" (through detach), "dead" (through a ReLU that was off)
    paths: list[list[str]]
    values: np.ndarray
    edges: list[Edge]
    nodes: list[str]


@dataclass(frozen=True)
class Term:
    column: Column
    coefficient: int


@dataclass(frozen=True)
class Problem:
    columns: list[Column]
    expected: np.ndarray  # the reference gradients of all points, flattened and joined
    answer: np.ndarray
    rel_tol: float
    abs_tol: float

    def fits(self, terms: list[Term]) -> bool:
        predicted = self.expected + sum((t.coefficient * t.column.values for t in terms), np.zeros_like(self.expected))
        return bool(np.all(np.abs(self.answer - predicted) <= self.abs_tol + self.rel_tol * np.abs(predicted)))

    def trivial(self, terms: list[Term]) -> bool:
        """Every path left out is "the answer is 0", not a chain-rule story."""
        paths = [column for column in self.columns if column.role == "path"]
        removed = [t.column for t in terms if t.column.role == "path" and t.coefficient == -1]
        return bool(paths) and len(removed) == len(paths)


def decompose(problem: Problem) -> list[Term] | None:
    """The fit with the fewest non-zero coefficients (then the smallest ones),
    or None when no small integer combination reproduces every point."""
    for size in range(1, min(MAX_TERMS, len(problem.columns)) + 1):
        candidates = comb(len(problem.columns), size) * 4**size
        if candidates > MAX_CANDIDATES:
            break
        fitting = [terms for terms in _candidates(problem.columns, size)
                   if not problem.trivial(terms) and problem.fits(terms)]
        if fitting:
            return min(fitting, key=lambda terms: sum(abs(t.coefficient) for t in terms))
    return _rounded_least_squares(problem)


def _candidates(columns: list[Column], size: int) -> Iterator[list[Term]]:
    for chosen in combinations(columns, size):
        for coefficients in product(*(COEFFICIENTS[column.role] for column in chosen)):
            yield [Term(column, c) for column, c in zip(chosen, coefficients, strict=True)]


def _rounded_least_squares(problem: Problem) -> list[Term] | None:
    if not problem.columns:
        return None
    matrix = np.stack([column.values for column in problem.columns], axis=1)
    solution = np.linalg.lstsq(matrix, problem.answer - problem.expected, rcond=None)[0]
    terms = []
    for column, raw in zip(problem.columns, solution, strict=True):
        allowed = (0, *COEFFICIENTS[column.role])
        nearest = min(allowed, key=lambda c: abs(c - raw))
        if nearest:
            terms.append(Term(column, nearest))
    if not terms or problem.trivial(terms) or not problem.fits(terms):
        return None
    return terms


def decomposition_columns(analyses: list[Analysis], part: str) -> list[Column]:
    """Reference paths, then cut and dead paths, matched across points by name.
    A path absent at a point contributes 0 there; one without a usable number
    (a path through sqrt(0)) at any point is left out of the decomposition."""
    sizes = [len(flatten(analysis.parts[part].value)) for analysis in analyses]
    found: dict[tuple[str, ...], dict[int, Column]] = {}
    for index, analysis in enumerate(analyses):
        for key, column in _point_columns(analysis, part):
            found.setdefault(key, {})[index] = column
    columns = []
    for by_point in found.values():
        first = next(iter(by_point.values()))
        parts = [_at(by_point.get(i), size) for i, size in enumerate(sizes)]
        if all(item is not None for item in parts):
            values = np.concatenate([item for item in parts if item is not None])
            if np.max(np.abs(values), initial=0.0) > ZERO_COLUMN:
                columns.append(Column(first.role, first.paths, values, first.edges, first.nodes))
    return columns


def _at(column: Column | None, size: int) -> np.ndarray | None:
    if column is None:
        return np.zeros(size)
    return column.values if column.values.size == size and np.all(np.isfinite(column.values)) else None


def _point_columns(analysis: Analysis, part: str) -> Iterator[tuple[tuple[str, ...], Column]]:
    reference = analysis.parts[part]
    paths = analysis.paths.get(reference.tensor, [])
    for path in paths:
        others = [edge for other in paths if other is not path for edge in other.edges]
        exclusive = [edge for edge in path.edges if edge not in others] or path.edges
        yield ("path", *path.names), Column("path", [path.names], _array(path.contribution), exclusive, [])
    expected = np.asarray(flatten(reference.value), dtype=float)
    for h in analysis.hypotheses.get(part, []):
        delta = _array(h.value) - expected if h.value is not None and len(flatten(h.value)) == expected.size else None
        if delta is None:
            continue
        if h.kind == "extra_path" and len(h.paths) == 1:
            yield ("cut", *h.paths[0]), Column("cut", h.paths, delta, h.highlight.wrong_edges, [])
        elif h.kind == "dead_branch" and h.detail.get("slopes") == "identity":
            yield ("dead",), Column("dead", h.paths, delta, list(h.highlight.wrong_edges), h.highlight.nodes)


def _array(value: Value) -> np.ndarray:
    if value is None:
        return np.array([np.nan])
    return np.asarray(flatten(value), dtype=float)


def _component(term: Term) -> dict[str, Any]:
    role, coefficient = term.column.role, term.coefficient
    if role == "cut":
        return {"kind": "cut_path", "paths": term.column.paths}
    if role == "dead":
        return {"kind": "dead_branch", "paths": term.column.paths}
    if coefficient < 0:
        return {"kind": "missing_path" if coefficient == -1 else "sign_error", "paths": term.column.paths}
    return {"kind": "extra_path", "paths": term.column.paths, "times": coefficient + 1}


def terms_hypothesis(terms: list[Term], analysis: Analysis, part: str) -> Hypothesis:
    """The decomposition told as one kind of mistake, or as a combination."""
    components = [_component(term) for term in terms]
    kinds = {(item["kind"], item.get("times")) for item in components}
    paths = [path for term in terms for path in term.column.paths]
    edges = list(dict.fromkeys(edge for term in terms for edge in term.column.edges))
    detail: dict[str, Any] = {"decomposition": [
        {"role": t.column.role, "paths": t.column.paths, "coefficient": t.coefficient} for t in terms]}
    if len(kinds) > 1:
        detail["components"] = components
        return Hypothesis("combination", None, paths, Highlight(wrong_edges=edges), detail)
    kind, times = next(iter(kinds))
    path_count = len(analysis.paths.get(analysis.parts[part].tensor, []))
    if kind == "extra_path" and times and len(terms) == path_count and len(analysis.backward_calls) >= 2:
        return _accumulation(analysis, part, paths, times, detail)
    name, facts = _single(kind, every_path=len(terms) == path_count, times=times, path_count=path_count)
    nodes = [node for term in terms for node in term.column.nodes]
    highlight = Highlight(missing_edges=edges) if name == "missing_path" else Highlight(wrong_edges=edges, nodes=nodes)
    return Hypothesis(name, None, paths, highlight, {**detail, **facts})


def _single(kind: str, *, every_path: bool, times: int | None, path_count: int) -> tuple[str, dict[str, Any]]:
    """Hypothesis kind and detail, matching what hypotheses.py builds for the same mistake."""
    if kind == "missing_path":
        return kind, {"path_count": path_count}
    if kind == "sign_error":
        return kind, {"whole": every_path}
    if kind == "cut_path":
        return "extra_path", {"reason": "detach"}
    if kind == "dead_branch":
        return kind, {"slopes": "identity"}
    return "extra_path", {"reason": "counted", "times": times}


def _accumulation(
    analysis: Analysis, part: str, paths: list[list[str]], times: int, detail: dict[str, Any]
) -> Hypothesis:
    """The whole gradient k times over, in a program that calls backward()
    more than once: the student summed calls that do not (or no longer) count."""
    calls = len(analysis.backward_calls)
    leaf = f"leaf:{analysis.parts[part].tensor}"
    outputs = dict.fromkeys(call.output_node for call in analysis.backward_calls)
    highlight = Highlight(nodes=[node for node in (leaf, *outputs) if analysis.graph.node(node) is not None])
    summing = any(h.kind == "accumulation" for h in analysis.hypotheses.get(part, []))
    if summing:  # .grad already sums every call: the student counted more calls than there are
        return Hypothesis("accumulation", None, paths, highlight, {**detail, "calls": calls, "counted": calls * times})
    return Hypothesis("accumulation", None, paths, highlight, {**detail, "calls": calls, "times": times,
                                                               "reason": "zeroed"})
