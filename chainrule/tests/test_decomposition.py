"""The integer decomposition on its own, with made-up path contributions."""

from __future__ import annotations

import numpy as np

from chainrule.diagnosis.across_points import hypothesis_identity
from chainrule.diagnosis.decomposition import Column, Problem, decompose
from chainrule.model import Highlight, Hypothesis


def column(values: list[float], role: str = "path", name: str = "p") -> Column:
    return Column(role, [["x", name, "z"]], np.array(values, dtype=float), [], [])


def problem(columns: list[Column], expected: list[float], answer: list[float]) -> Problem:
    return Problem(columns, np.array(expected, dtype=float), np.array(answer, dtype=float), 1e-6, 1e-9)


def test_it_finds_a_single_missing_path() -> None:
    mul, pow_ = column([3.0, 2.5], name="mul"), column([4.0, 1.0], name="pow")
    terms = decompose(problem([mul, pow_], [7.0, 3.5], [4.0, 1.0]))
    assert terms is not None and [(t.column.paths, t.coefficient) for t in terms] == [([["x", "mul", "z"]], -1)]


def test_it_prefers_fewer_then_smaller_coefficients() -> None:
    single, double = column([1.0, 2.0], name="a"), column([2.0, 4.0], name="b")
    terms = decompose(problem([single, double], [0.0, 0.0], [2.0, 4.0]))
    assert terms is not None and [(t.column is double, t.coefficient) for t in terms] == [(True, 1)]


def test_it_never_calls_every_path_missing_a_story() -> None:
    a, b = column([1.0, 2.0], name="a"), column([3.0, 1.0], name="b")
    assert decompose(problem([a, b], [4.0, 3.0], [0.0, 0.0])) is None


def test_cut_and_dead_paths_only_count_positively() -> None:
    cut = column([8.0, 2.0], role="cut")
    assert decompose(problem([cut], [4.0, 1.0], [12.0, 3.0])) is not None
    assert decompose(problem([cut], [4.0, 1.0], [-4.0, -1.0])) is None


def test_it_gives_up_when_nothing_small_fits() -> None:
    a = column([1.0, 2.0])
    assert decompose(problem([a], [3.0, 3.0], [3.5, 3.0])) is None


def test_many_paths_fall_back_to_rounded_least_squares() -> None:
    rng = np.random.default_rng(0)
    columns = [column(list(rng.uniform(-3, 3, size=40)), name=f"p{i}") for i in range(14)]
    expected = np.sum([c.values for c in columns], axis=0)
    answer = expected - columns[1].values - 2 * columns[4].values + columns[7].values - columns[9].values
    terms = decompose(problem(columns, list(expected), list(answer)))
    assert terms is not None
    assert sorted((columns.index(t.column), t.coefficient) for t in terms) == [(1, -1), (4, -2), (7, 1), (9, -1)]


def test_the_identity_of_a_hypothesis_ignores_measured_numbers() -> None:
    def local(used_value: float) -> Hypothesis:
        return Hypothesis("wrong_local_derivative", 1.0, [["x", "pow", "z"]], Highlight(),
                          {"edge": ["x", "pow"], "used": "3·x", "used_value": [used_value], "calls": 2})

    assert hypothesis_identity(local(5.1)) == hypothesis_identity(local(6.0))
