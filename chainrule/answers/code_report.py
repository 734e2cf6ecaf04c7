"""Validation of what the harness job emits. The student's code ran in the
same process as the harness and could have written anything, so the output is
untrusted data: every field is checked for type, size and finite numbers, and
a single problem rejects the whole document (MalformedOutput)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from chainrule.answers.trace_report import MalformedTrace, ProgramTrace, validated_trace
from chainrule.values import Value

MAX_TEXT = 2_000
MAX_KEYS = 64
MAX_NUMBERS = 20_000  # per value
MAX_DEPTH = 6


class MalformedOutput(ValueError):
    """The harness output does not have the promised shape."""


@dataclass(frozen=True)
class RaisedError:
    type: str
    message: str
    line: int | None


@dataclass(frozen=True)
class PointOutput:
    values: dict[str, Value]
    error: str | None
    unread: dict[str, str] = field(default_factory=dict)
    raised: RaisedError | None = None
    trace: ProgramTrace | None = None  # program and fix parts: what the code did with autograd


@dataclass(frozen=True)
class HarnessOutput:
    ok: bool
    error: str | None
    points: list[PointOutput]
    stdout: str


def validated_output(data: Any, *, point_count: int, line_count: int | None = None) -> HarnessOutput:
    """Raises MalformedOutput; otherwise every point of the job is present,
    unless the job failed before the first point (then `error` says why).
    `line_count`: the student's source's lines, which a trace's lines must be."""
    document = _mapping(data, "the output", {"ok", "error", "points", "stdout"})
    if not isinstance(document.get("ok"), bool):
        raise MalformedOutput("ok must be true or false")
    error = _text_or_none(document.get("error"), "error")
    raw_points = document.get("points")
    if not isinstance(raw_points, list):
        raise MalformedOutput("points must be a list")
    if len(raw_points) != point_count and not (error is not None and not raw_points):
        raise MalformedOutput(f"{len(raw_points)} points reported for {point_count} evaluated")
    points = [_point(item, index, line_count) for index, item in enumerate(raw_points)]
    stdout = _text_or_none(document.get("stdout", ""), "stdout") or ""
    return HarnessOutput(ok=document["ok"], error=error, points=points, stdout=stdout)


def _mapping(data: Any, where: str, allowed: set[str] | None = None) -> dict[str, Any]:
    """An object with text keys; with `allowed`, only those keys."""
    if not isinstance(data, dict) or not all(isinstance(key, str) for key in data):
        raise MalformedOutput(f"{where} must be an object")
    unknown = set(data) - allowed if allowed is not None else set()
    if unknown:
        raise MalformedOutput(f"{where} has unexpected fields {sorted(unknown)[:3]}")
    return data


def _text_or_none(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedOutput(f"{where} must be text")
    return storable_text(value if len(value) <= MAX_TEXT else value[: MAX_TEXT - 1] + "…")


def storable_text(text: str) -> str:
    """Text a page, a JSON answer and PostgreSQL's jsonb can hold. `raise Exception('\\ud800')` in
    a student's code put a lone surrogate in the feedback: the submission's page and API answer were
    500s (no UTF-8 for it), and on PostgreSQL saving the result failed in the worker, leaving the
    row running and the student's later code submissions held behind it; a NUL (`chr(0)`) likewise."""
    return text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def _point(data: Any, index: int, line_count: int | None) -> PointOutput:
    where = f"point {index + 1}"
    point = _mapping(data, where, {"values", "error", "unread", "raised", "trace"})
    values = _mapping(point.get("values", {}), f"{where} values")
    unread = _mapping(point.get("unread") or {}, f"{where} unread")
    if len(values) + len(unread) > MAX_KEYS:
        raise MalformedOutput(f"{where} has too many values")
    return PointOutput(
        values={storable_text(key[:200]): _value(value, f"{where} {key[:40]!r}") for key, value in values.items()},
        error=_text_or_none(point.get("error"), f"{where} error"),
        unread={storable_text(key[:200]): _text_or_none(text, f"{where} unread") or "" for key, text in unread.items()},
        raised=_raised(point.get("raised"), where),
        trace=_trace(point.get("trace"), where, line_count),
    )


def _trace(data: Any, where: str, line_count: int | None) -> ProgramTrace | None:
    if data is None:
        return None
    try:
        return validated_trace(data, line_count=line_count)
    except MalformedTrace as problem:
        raise MalformedOutput(f"{where} trace: {problem}") from None


def _raised(data: Any, where: str) -> RaisedError | None:
    if data is None:
        return None
    raised = _mapping(data, f"{where} raised", {"type", "message", "line"})
    kind, line = raised.get("type"), raised.get("line")
    if not isinstance(kind, str) or not kind.isidentifier() or len(kind) > 100:
        raise MalformedOutput(f"{where}: the exception type must be a name")
    if line is not None and (isinstance(line, bool) or not isinstance(line, int)):
        raise MalformedOutput(f"{where}: the line must be a number")
    return RaisedError(kind, _text_or_none(raised.get("message"), f"{where} message") or kind, line)


def _value(data: Any, where: str) -> Value:
    count = [0]
    return _checked(data, where, count, depth=0)


def _checked(data: Any, where: str, count: list[int], *, depth: int) -> Value:
    if data is None and depth == 0:
        return None
    if isinstance(data, (int, float)) and not isinstance(data, bool):
        count[0] += 1
        if count[0] > MAX_NUMBERS or not math.isfinite(data):
            raise MalformedOutput(f"{where} is too large or not finite")
        return float(data)
    if isinstance(data, list) and depth < MAX_DEPTH:
        return [_checked(item, where, count, depth=depth + 1) for item in data]
    raise MalformedOutput(f"{where} is not a number, a (nested) list of numbers or null")
