"""Which precomputed hypotheses predict an answer, vectorised: a graph with
hundreds of nodes has thousands of wrong local derivatives, and a numeric
answer must still be diagnosed in well under a millisecond. Numbers only."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from chainrule.model import Hypothesis
from chainrule.values import RaggedValue, Value, flatten, shape_of


@dataclass
class _Group:
    indices: list[int] = field(default_factory=list)
    rows: list[list[float]] = field(default_factory=list)
    matrix: np.ndarray | None = None


@dataclass
class HypothesisIndex:
    hypotheses: list[Hypothesis]
    groups: dict[int, _Group]  # by number of entries (shapes are checked by the caller)
    special: list[int]  # None predictions and "any number": checked one by one

    @classmethod
    def build(cls, hypotheses: list[Hypothesis]) -> HypothesisIndex:
        groups: dict[int, _Group] = {}
        special = []
        for index, hypothesis in enumerate(hypotheses):
            if hypothesis.any_number or hypothesis.value is None:
                special.append(index)
                continue
            numbers = flatten(hypothesis.value)
            group = groups.setdefault(len(numbers), _Group())
            group.indices.append(index)
            group.rows.append(numbers)
        for group in groups.values():
            group.matrix = np.asarray(group.rows, dtype=float)
            group.rows = []
        return cls(hypotheses, groups, special)

    def fitting(self, answer: Value, *, rel_tol: float, abs_tol: float) -> list[Hypothesis]:
        """Every hypothesis whose prediction equals the answer within tolerance, in list order."""
        found = [i for i in self.special if _special_fits(self.hypotheses[i], answer)]
        if answer is not None:
            found += self._numeric(answer, rel_tol, abs_tol)
        return [self.hypotheses[i] for i in sorted(found)]

    def _numeric(self, answer: Value, rel_tol: float, abs_tol: float) -> list[int]:
        try:
            answer_shape = shape_of(answer)
        except RaggedValue:
            return []
        numbers = np.asarray(flatten(answer), dtype=float)
        group = self.groups.get(numbers.size)
        if group is None or group.matrix is None:
            return []
        matrix = group.matrix
        with np.errstate(invalid="ignore"):
            close = np.abs(matrix - numbers) <= abs_tol + rel_tol * np.abs(matrix)
        hits = np.flatnonzero(close.all(axis=1))
        return [group.indices[i] for i in hits if _same_shape(self.hypotheses[group.indices[i]].value, answer_shape)]


def _special_fits(hypothesis: Hypothesis, answer: Value) -> bool:
    return answer is not None if hypothesis.any_number else answer is None


def _same_shape(value: Value, answer_shape: list[int] | None) -> bool:
    try:
        shape = shape_of(value)
    except RaggedValue:
        return False
    if shape == answer_shape:
        return True
    return shape is not None and answer_shape is not None and int(np.prod(shape)) == 1 == int(np.prod(answer_shape))
