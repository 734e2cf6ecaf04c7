"""Values are rounded to the digits their dtype holds (7 for float32) and predictions to 12: as
arithmetic over whole arrays, yet the same double as formatting each entry and reading it back."""

from __future__ import annotations

import numpy as np
import pytest

from chainrule.values import rounded_array


def _formatted(array: np.ndarray, digits: int) -> np.ndarray:
    return np.array([float(f"{entry:.{digits}g}") if entry else entry for entry in array.tolist()])


RNG = np.random.default_rng(7)
ARRAYS = {
    "any magnitude": RNG.standard_normal(50_000) * 10.0 ** RNG.integers(-30, 30, 50_000),
    "float32 results": RNG.standard_normal(50_000).astype(np.float32).astype(float),
    "exact halves (ties)": RNG.integers(-10**6, 10**6, 50_000) / 8.0,
    "powers of ten": 10.0 ** RNG.integers(-25, 25, 5_000).astype(float),
    "next to powers of ten": 10.0 ** RNG.integers(-8, 8, 5_000) * (1 + RNG.integers(-3, 4, 5_000) * 2.0 ** -52),
    "edges": np.tile([0.5, 2.5, 0.05, 0.15, 1e-300, 5e-324, 1e300, 1.7e308, np.inf, -np.inf, np.nan, 9.9999995,
                      99999995.0, 0.1, 1 / 3, -0.0, 0.0, 123456789012.5, 1e22, 1e23, 1e-22, 1e-23, -2.5e-7], 10),
    "a few entries": np.array([0.123456789, -2.5e-7, 1 / 3]),
}


@pytest.mark.parametrize("digits", [3, 4, 7, 12, 15, 17])
@pytest.mark.parametrize("name", list(ARRAYS))
def test_rounding_gives_the_double_formatting_gives(name: str, digits: int) -> None:
    array = ARRAYS[name]
    got, want = rounded_array(array, digits), _formatted(array, digits)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip(array[~same][:5], got[~same][:5], want[~same][:5], strict=True))
    assert (np.signbit(got) == np.signbit(want)).all()


def test_only_the_entries_asked_for_are_rounded() -> None:
    array = np.array([[0.123456789, 2.0], [1 / 3, 0.0]])
    out = rounded_array(array, 3, only=np.array([0, 2]))
    assert out.tolist() == [[0.123, 2.0], [0.333, 0.0]] and array[0, 0] == 0.123456789
