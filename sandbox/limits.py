"""Per-job resource limits and the validation the Django system check calls."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

MIB = 1024 * 1024

# Below these a torch job cannot even start; above them a limit stops limiting.
_BOUNDS: dict[str, tuple[float, float, str]] = {
    "wall_seconds": (0.1, 3600, "s"),
    "cpu_seconds": (0.1, 3600, "s"),
    "memory_mb": (64, 65536, "MiB"),
    "processes": (1, 4096, "processes"),
    "file_mb": (1, 4096, "MiB"),
    "max_files": (16, 1_000_000, "files"),
    "open_files": (32, 65536, "descriptors"),
    "output_bytes": (1024, 64 * MIB, "bytes"),
    "result_bytes": (1024, 64 * MIB, "bytes"),
}
_INTEGER_FIELDS = frozenset(
    {"memory_mb", "processes", "file_mb", "max_files", "open_files", "output_bytes", "result_bytes"}
)


class LimitsError(ValueError):
    """An impossible limit; the message names the field and the accepted range."""


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 5.0
    cpu_seconds: float = 3.0
    memory_mb: int = 1024
    processes: int = 64
    file_mb: int = 16  # per file (RLIMIT_FSIZE) and the whole job tmpfs
    max_files: int = 1024  # inodes in the job tmpfs
    open_files: int = 128
    output_bytes: int = MIB  # per stream: stdout, stderr
    result_bytes: int = MIB  # the JSON document emitted by the harness

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> Limits:
        """Build from untrusted JSON; unknown keys or wrong types are rejected."""
        if not isinstance(data, dict):
            raise LimitsError("limits must be a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise LimitsError(f"unknown limit(s): {', '.join(map(str, unknown))}")
        limits = cls(**data)
        validate_limits(limits)
        return limits


def _check_field(name: str, value: object) -> None:
    low, high, unit = _BOUNDS[name]
    integer = name in _INTEGER_FIELDS
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        kind = "an integer" if integer else "a number"
        raise LimitsError(f"{name} must be {kind}, got {value!r}")
    if not math.isfinite(value) or not low <= value <= high:
        raise LimitsError(f"{name}={value!r} is outside the possible range {low:g}–{high:g} {unit}")


def validate_limits(limits: Limits) -> Limits:
    """Reject impossible limits with a message fit for a system check; return them."""
    for name in _BOUNDS:
        _check_field(name, getattr(limits, name))
    if limits.file_mb > limits.memory_mb:
        raise LimitsError(
            f"file_mb={limits.file_mb} exceeds memory_mb={limits.memory_mb}: "
            "the job's files live in memory (tmpfs) and count against its memory limit"
        )
    return limits
