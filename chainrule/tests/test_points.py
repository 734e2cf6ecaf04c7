"""Evaluation points: the seed first, then stable random points that keep the seed's case."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chainrule import Analysis
from chainrule.evaluation_points import ZERO_MARGIN, evaluation_points, kinks_clear, usable_points
from chainrule.tests.point_analyses import seed_analyses, seed_points

PARAMS: dict[str, Any] = {"x0": 2.0, "y0": -3.0, "steps": 3, "xs": [1.0, -2.0, 0.0], "flag": True}


def points(**changes: Any) -> list[dict[str, Any]]:
    arguments: dict[str, Any] = {"params": PARAMS, "ranges": {}, "count": 8, "seed": "alice/visual-walkthrough"}
    return evaluation_points(**{**arguments, **changes})


def test_it_puts_the_seed_params_first() -> None:
    assert points()[0] == PARAMS


def test_it_draws_the_asked_number_of_distinct_points() -> None:
    drawn = points()
    assert len(drawn) == 9
    assert len({repr(point) for point in drawn}) == 9


def test_it_is_stable_for_a_seed_string_and_differs_between_seeds() -> None:
    assert points() == points()
    assert points() != points(seed="bob/visual-walkthrough")


def test_it_keeps_signs_and_structural_values_without_a_range() -> None:
    for point in points()[1:]:
        assert point["x0"] >= ZERO_MARGIN and point["y0"] <= -ZERO_MARGIN
        assert point["xs"][0] > 0 and point["xs"][1] < 0 and point["xs"][2] == 0.0
        assert point["steps"] == 3 and point["flag"] is True


def test_it_perturbs_within_the_spread() -> None:
    for point in points()[1:]:
        assert abs(point["x0"] - 2.0) <= 1.5 and abs(point["y0"] + 3.0) <= 1.5


def test_it_draws_from_the_authors_range_even_across_zero() -> None:
    drawn = points(ranges={"x0": {"min": -3, "max": 3}}, count=30)[1:]
    assert all(-3 <= point["x0"] <= 3 and abs(point["x0"]) >= ZERO_MARGIN for point in drawn)
    assert any(point["x0"] < 0 for point in drawn) and any(point["x0"] > 0 for point in drawn)


def test_it_draws_from_choices() -> None:
    drawn = points(ranges={"xs": {"choices": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]}})[1:]
    assert {tuple(point["xs"]) for point in drawn} <= {(1.0, 2.0, 3.0), (4.0, 5.0, 6.0)}


def test_it_varies_only_the_named_params() -> None:
    for point in points(vary=["x0"])[1:]:
        assert point["y0"] == -3.0 and point["xs"] == [1.0, -2.0, 0.0]


def test_accept_can_veto_points_but_never_the_seed() -> None:
    drawn = points(accept=lambda point: point["x0"] > 2.5)
    assert drawn[0] == PARAMS and all(point["x0"] > 2.5 for point in drawn[1:])


def test_it_stops_when_there_are_too_few_distinct_points() -> None:
    assert evaluation_points(params={"n": 2}, ranges={}, count=5, seed="s") == [{"n": 2}]


def test_kinks_clear_sees_a_relu_input_at_zero() -> None:
    near_zero = [{"x0": 0.0005}, {"x0": -1.5}]
    analyses = seed_analyses("dead-relu", near_zero)
    assert [kinks_clear(analysis) for analysis in analyses] == [False, True]


def test_seed_points_of_the_dead_relu_stay_negative() -> None:
    assert all(point["x0"] < 0 for point in seed_points("dead-relu"))


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), st.text(max_size=20))
def test_perturbed_values_never_cross_or_touch_zero(value: float, seed: str) -> None:
    for point in evaluation_points(params={"v": value}, ranges={}, count=3, seed=seed)[1:]:
        if value == 0:
            assert point["v"] == 0
        else:
            assert math.copysign(1, point["v"]) == math.copysign(1, value) and abs(point["v"]) >= ZERO_MARGIN


def test_usable_points_drop_failed_and_kinked_points_and_keep_the_seed() -> None:
    candidates = [{"x0": -1.5}, {"x0": 0.0004}, {"x0": -2.0}, {"x0": -0.5}, {"x0": -1.0}]
    analyses = list(seed_analyses("dead-relu", candidates))
    with_failure: list[Analysis | None] = [analyses[0], analyses[1], None, analyses[3], analyses[4]]
    kept, kept_analyses = usable_points(candidates, with_failure, count=1)
    assert kept == [{"x0": -1.5}, {"x0": -0.5}] and kept_analyses == [analyses[0], analyses[3]]
    with pytest.raises(ValueError, match="seed point"):
        usable_points(candidates, [None, *with_failure[1:]], count=2)
