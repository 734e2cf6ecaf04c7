"""The job result document, and its validation on the trusted side.

Everything in a response is derived from what an untrusted job did, so the
client re-checks the schema and every size before believing any of it.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from sandbox.limits import Limits

STATUSES = ("ok", "error", "timeout", "memory", "killed")
HARDENED = "hardened"
INSECURE_DEV = "insecure-dev"  # rlimits only: never for real students
BACKENDS = (HARDENED, INSECURE_DEV)
MAX_ERROR_CHARS = 4096
_MAX_TIMINGS = 16


class InvalidResponse(ValueError):
    """The response breaks the schema or a size cap."""


@dataclass(frozen=True)
class JobResult:
    status: str
    exit_code: int | None = None
    signal: int | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    result: Any = None
    error: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    backend: str = HARDENED

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise InvalidResponse(message)


def _optional_int(doc: dict[str, Any], key: str) -> int | None:
    value = doc.get(key)
    _require(value is None or (isinstance(value, int) and not isinstance(value, bool)), f"{key} must be an integer")
    _require(value is None or -(2**31) <= value < 2**31, f"{key} out of range")
    return value


def _text(doc: dict[str, Any], key: str, cap: int) -> str:
    value = doc.get(key, "")
    _require(isinstance(value, str) and len(value) <= cap, f"{key} must be a string of at most {cap} characters")
    return str(value)


def _flag(doc: dict[str, Any], key: str) -> bool:
    value = doc.get(key, False)
    _require(isinstance(value, bool), f"{key} must be a boolean")
    return bool(value)


def _timings(value: object) -> dict[str, float]:
    _require(isinstance(value, dict) and len(value) <= _MAX_TIMINGS, "timings must be a small object")
    assert isinstance(value, dict)
    for key, number in value.items():
        _require(isinstance(key, str) and len(key) <= 32, "timing names must be short strings")
        _require(isinstance(number, (int, float)) and not isinstance(number, bool), "timings must be numbers")
        _require(math.isfinite(number) and number >= 0, "timings must be finite and non-negative")
    return {key: float(number) for key, number in value.items()}


def _emitted(doc: dict[str, Any], limits: Limits) -> tuple[Any, str | None]:
    """Parse the harness's JSON; a bad document is the job's fault, not ours."""
    raw = doc.get("result_json")
    if raw is None:
        return None, None
    _require(isinstance(raw, str), "result_json must be a string")
    if len(raw.encode()) > limits.result_bytes:
        return None, f"Result larger than {limits.result_bytes} bytes"
    try:
        return json.loads(raw), None
    except (ValueError, RecursionError):
        return None, "The job emitted a result that is not valid JSON"


def parse_response(doc: object, limits: Limits) -> JobResult:
    """Turn an untrusted response document into a JobResult, or raise InvalidResponse."""
    _require(isinstance(doc, dict), "response must be an object")
    assert isinstance(doc, dict)
    status, backend = doc.get("status"), doc.get("backend")
    _require(status in STATUSES, f"unknown status {status!r}")
    _require(backend in BACKENDS, f"unknown backend {backend!r}")
    error = doc.get("error")
    short_text = isinstance(error, str) and len(error) <= MAX_ERROR_CHARS
    _require(error is None or short_text, "error must be a short string")
    result, result_error = _emitted(doc, limits)
    if result_error is not None and status == "ok":
        status, error = "error", result_error
    return JobResult(
        status=str(status),
        exit_code=_optional_int(doc, "exit_code"),
        signal=_optional_int(doc, "signal"),
        stdout=_text(doc, "stdout", limits.output_bytes),
        stderr=_text(doc, "stderr", limits.output_bytes),
        stdout_truncated=_flag(doc, "stdout_truncated"),
        stderr_truncated=_flag(doc, "stderr_truncated"),
        result=result,
        error=error,
        timings=_timings(doc.get("timings", {})),
        backend=str(backend),
    )
