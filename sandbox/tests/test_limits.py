from __future__ import annotations

import math

import pytest

from sandbox import Limits, LimitsError, validate_limits


def test_the_defaults_are_the_documented_ones() -> None:
    limits = validate_limits(Limits())
    assert (limits.wall_seconds, limits.cpu_seconds, limits.memory_mb) == (5.0, 3.0, 1024)
    assert (limits.processes, limits.file_mb, limits.output_bytes) == (64, 16, 1024 * 1024)


@pytest.mark.parametrize(("changes", "message"), [
    ({"wall_seconds": 0}, "wall_seconds=0 is outside the possible range"),
    ({"wall_seconds": -1.0}, "wall_seconds"),
    ({"cpu_seconds": math.nan}, "cpu_seconds"),
    ({"memory_mb": 8}, "memory_mb=8 is outside the possible range 64–65536 MiB"),
    ({"memory_mb": 1.5}, "memory_mb must be an integer"),
    ({"processes": 0}, "processes"),
    ({"processes": True}, "processes must be an integer"),
    ({"output_bytes": 10}, "output_bytes"),
    ({"file_mb": 2048, "memory_mb": 1024}, "file_mb=2048 exceeds memory_mb=1024"),
])
def test_it_rejects_impossible_limits(changes: dict[str, object], message: str) -> None:
    with pytest.raises(LimitsError, match=message):
        validate_limits(Limits(**changes))  # type: ignore[arg-type]


def test_from_dict_rejects_unknown_keys() -> None:
    with pytest.raises(LimitsError, match="unknown limit"):
        Limits.from_dict({"wall_seconds": 1, "gpu": 1})


def test_from_dict_round_trips() -> None:
    limits = Limits(wall_seconds=2.5, memory_mb=512)
    assert Limits.from_dict(limits.to_dict()) == limits
