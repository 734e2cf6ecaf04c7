"""Validation of one catalog file into an AssignmentSpec (no database access).

Every problem is reported as a CatalogError naming the file, the field and what is
wrong, so an instructor can fix a course-as-code pull request from the message alone.
"""

from __future__ import annotations

import hashlib
import json
import keyword
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from assignments.models import RELEASES
from assignments.part_config import NumericConfig, PartConfig, config_parse
from catalog.errors import CatalogError
from catalog.toml_text import toml_loads
from chainrule import AnswerError, parse_numeric
from chainrule.part_keys import is_label, is_tensor_path
from chainrule.values import Value
from grading.code_syntax import code_shape_problem

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
TOP_LEVEL = {"slug", "title", "statement", "reference", "params", "parts", "policy", "variants", "vetting"}
PART_FIELDS = {"key", "kind", "points", "rel_tol", "abs_tol", "hint", "prompt", "expected", "config"}
POLICY_FIELDS = {"opens_at", "due_at", "closes_at", "max_attempts", "counts", "late_penalty", "time_zone",
                 "rate_limit", "hints_after", "reveal", "release_before", "release_after"}
REVEALS = ("never", "after_due", "after_close", "after_attempts")
KINDS = ("numeric", "symbolic", "code", "choice")
MAX_SOURCE = 20_000
DATE_YEARS = (1900, 9000)


def is_finite_number(value: Any) -> bool:
    """An int or float a float can hold (10**400 cannot: math.isfinite raised OverflowError on it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def shown(value: Any, limit: int = 60) -> str:
    """A value as a message quotes it: its repr, cut short (a 4,000-digit int, a 1 MB string)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**limit:
        digits = int(abs(value).bit_length() * 0.30103) + 1  # str() refuses past 4,300 digits (a TOML 0xfff…)
        if digits > 4_000:
            return f"an integer of about {digits} digits"
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class PartSpec:
    key: str
    kind: str
    points: float
    rel_tol: float
    abs_tol: float
    hint: str = ""
    prompt: str = ""
    expected: Value = None
    has_expected: bool = False
    config: PartConfig = field(default_factory=NumericConfig)


@dataclass(frozen=True)
class AssignmentSpec:
    path: str
    slug: str
    title: str
    statement: str
    reference: str
    params: dict[str, Any]
    parts: list[PartSpec]
    policy: dict[str, Any]
    variants: dict[str, Any]
    source_hash: str
    accepted: dict[str, str] = field(default_factory=dict)  # vetting reason code → written justification


class _Checker:
    """Carries the file name so every error says where it comes from."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, name: str, problem: str) -> CatalogError:
        return CatalogError(self.path, name, problem)

    def text(self, data: dict[str, Any], name: str, *, required: bool, limit: int, where: str = "") -> str:
        value = data.get(name, None)
        label = f"{where}{name}"
        if value is None:
            if required:
                raise self.fail(label, "is required")
            return ""
        if not isinstance(value, str):
            raise self.fail(label, f"must be a string, got {type(value).__name__}")
        if required and not value.strip():
            raise self.fail(label, "must not be empty")
        if len(value) > limit:
            raise self.fail(label, f"is longer than {limit} characters")
        return value

    def number(self, value: Any, label: str, *, minimum: float, strict: bool = False) -> float:
        if not is_finite_number(value):
            raise self.fail(label, f"must be a finite number, got {shown(value)}")
        if value < minimum or (strict and value == minimum):
            raise self.fail(label, f"must be {'>' if strict else '>='} {minimum}, got {shown(value)}")
        return float(value)

    def unknown_keys(self, data: dict[str, Any], allowed: set[str], where: str) -> None:
        extra = sorted(set(data) - allowed)
        if extra:
            raise self.fail(f"{where}{extra[0]}", f"unknown field (allowed: {', '.join(sorted(allowed))})")


def spec_from_file(path: Path) -> AssignmentSpec:
    label = path.name
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CatalogError(label, "file", f"cannot be read ({exc.strerror})") from None
    return spec_from_data(catalog_data(label, raw), path=label, source_hash=hashlib.sha256(raw).hexdigest())


def catalog_data(label: str, raw: bytes) -> dict[str, Any]:
    """The TOML table of one catalog file (a file on disk or an uploaded one), nested at most
    catalog.toml_text.MAX_DEPTH deep and without NULs. Raises CatalogError."""

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CatalogError(label, "file", "is not UTF-8 text") from None
    return toml_loads(text, path=label, field="file")


def spec_from_data(data: dict[str, Any], *, path: str, source_hash: str = "") -> AssignmentSpec:
    check = _Checker(path)
    check.unknown_keys(data, TOP_LEVEL, "")
    slug = check.text(data, "slug", required=True, limit=50)
    if not SLUG_RE.match(slug):
        raise check.fail("slug", f"must be lowercase words joined by '-', got {shown(slug)}")
    reference = check.text(data, "reference", required=True, limit=MAX_SOURCE)
    _check_compiles(check, reference)
    params = _params(check, data.get("params", {}))
    parts = _parts(check, data.get("parts"), params)
    return AssignmentSpec(
        path=path,
        slug=slug,
        title=check.text(data, "title", required=True, limit=200),
        statement=check.text(data, "statement", required=True, limit=MAX_SOURCE),
        reference=reference,
        params=params,
        parts=parts,
        policy=_policy(check, data.get("policy", {})),
        variants=_variants(check, data.get("variants", {}), params),
        source_hash=source_hash,
        accepted=_accepted(check, data.get("vetting", {})),
    )


def _accepted(check: _Checker, vetting: Any) -> dict[str, str]:
    """[vetting] accept = { "<reason code>" = "why this is fine" }: a reviewed, written override."""
    if not isinstance(vetting, dict) or set(vetting) - {"accept"}:
        raise check.fail("vetting", "must be a table with one field, accept = { reason = \"justification\" }")
    accept = vetting.get("accept", {})
    if not isinstance(accept, dict) or not all(isinstance(v, str) and v.strip() for v in accept.values()):
        raise check.fail("vetting.accept", "must map reason codes to non-empty justifications")
    return dict(accept)


def _check_compiles(check: _Checker, source: str) -> None:
    """Bounded, as this runs in the web request: compile() alone spends seconds on nested lambdas and
    raises RecursionError or MemoryError on a long chain of operators."""
    problem = code_shape_problem(source, max_statement_tokens=MAX_SOURCE)
    if problem is not None:
        raise check.fail("reference", problem)
    try:
        compile(source, "reference", "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f" on line {exc.lineno}" if exc.lineno else ""
        raise check.fail("reference", f"has a syntax error{where}: {exc.msg}") from None
    except ValueError:  # NUL bytes, before Python 3.11.4
        raise check.fail("reference", "has a syntax error: source code string cannot contain null bytes") from None
    except (RecursionError, MemoryError):  # 19,000 unary minuses, a 9,900-step attribute chain: the parser gives up
        raise check.fail("reference", "is nested too deeply to compile: split it into statements") from None


def date_storable(value: datetime) -> bool:
    """A date the database keeps in every time zone: PostgreSQL's timestamps end at 9999, and
    9999-12-31T23:59 in New York is already in the year 10000 in UTC (a DataError, a 500)."""
    return DATE_YEARS[0] <= value.year <= DATE_YEARS[1]


def _params(check: _Checker, params: Any) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise check.fail("params", "must be a table of name = number or [numbers]")
    for name, value in params.items():
        label = f"params.{name}"
        if not name.isidentifier() or keyword.iskeyword(name) or name == "torch":
            raise check.fail(label, "must be a Python identifier other than a keyword or 'torch'")
        values = value if isinstance(value, list) else [value]
        if not values:
            raise check.fail(label, "must not be an empty list")
        for item in _flatten(values):
            check.number(item, label, minimum=-math.inf)
    return dict(params)


def _flatten(values: list[Any]) -> list[Any]:
    flat: list[Any] = []
    for item in values:
        flat.extend(_flatten(item) if isinstance(item, list) else [item])
    return flat


def _parts(check: _Checker, parts: Any, params: dict[str, Any]) -> list[PartSpec]:
    if not isinstance(parts, list) or not parts:
        raise check.fail("parts", "must be a non-empty array of [[parts]] tables")
    specs = [_part(check, part, index, params) for index, part in enumerate(parts)]
    seen: set[str] = set()
    for spec in specs:
        if spec.key in seen:
            raise check.fail(f"parts.{spec.key}", "key is used twice")
        seen.add(spec.key)
    return specs


def _config(check: _Checker, config: Any, *, kind: str, params: dict[str, Any], where: str) -> PartConfig:
    if not isinstance(config, dict):
        raise check.fail(f"{where}config", "must be a table")
    try:
        json.dumps(config)
    except (TypeError, ValueError):
        raise check.fail(f"{where}config", "must hold only strings, numbers, lists and tables") from None

    def fail(name: str, problem: str) -> CatalogError:
        return check.fail(f"{where}{name}", problem)

    return config_parse(kind, config, params=params, fail=fail)


def _part(check: _Checker, part: Any, index: int, params: dict[str, Any]) -> PartSpec:
    where = f"parts[{index}]."
    if not isinstance(part, dict):
        raise check.fail(f"parts[{index}]", "must be a table")
    check.unknown_keys(part, PART_FIELDS, where)
    key = check.text(part, "key", required=True, limit=64, where=where)
    kind = part.get("kind", "numeric")
    if kind not in KINDS:
        raise check.fail(f"{where}kind", f"must be one of {', '.join(KINDS)}, got {shown(kind)}")
    if kind == "numeric" and not is_tensor_path(key):
        raise check.fail(f"{where}key", f"{shown(key)} is not a valid key for a numeric part: a tensor or its "
                                        "gradient, e.g. 'x.grad', 'layer.weight.grad', 'y'")
    if not is_label(key):
        raise check.fail(f"{where}key", f"{shown(key)} is not a valid key for a {kind} part (a name such as 'dz_dx')")
    expected, has_expected = _expected(check, part, where)
    config = _config(check, part.get("config", {}), kind=kind, params=params, where=where)
    return PartSpec(
        key=key,
        kind=kind,
        points=check.number(part.get("points", 1), f"{where}points", minimum=0, strict=True),
        rel_tol=check.number(part.get("rel_tol", 1e-4), f"{where}rel_tol", minimum=0),
        abs_tol=check.number(part.get("abs_tol", 1e-6), f"{where}abs_tol", minimum=0),
        hint=check.text(part, "hint", required=False, limit=2000, where=where),
        prompt=check.text(part, "prompt", required=False, limit=MAX_SOURCE, where=where),
        expected=expected,
        has_expected=has_expected,
        config=config,
    )


def _expected(check: _Checker, part: dict[str, Any], where: str) -> tuple[Value, bool]:
    if "expected" not in part:
        return None, False
    raw = part["expected"]
    text = raw if isinstance(raw, str) else repr(raw)
    try:
        return parse_numeric(text), True
    except AnswerError as exc:
        raise check.fail(f"{where}expected", str(exc)) from None


def _policy(check: _Checker, policy: Any) -> dict[str, Any]:
    if not isinstance(policy, dict):
        raise check.fail("policy", "must be a table")
    check.unknown_keys(policy, POLICY_FIELDS, "policy.")
    out: dict[str, Any] = {}
    for name in ("opens_at", "due_at", "closes_at"):
        if name in policy:
            value = policy[name]
            if not isinstance(value, datetime) or value.tzinfo is None:
                raise check.fail(f"policy.{name}", "must be a date-time with a time zone, e.g. 2026-12-01T23:59:00Z")
            if not date_storable(value):
                raise check.fail(f"policy.{name}", f"must be in the years {DATE_YEARS[0]} to {DATE_YEARS[1]}")
            out[name] = value
    if "max_attempts" in policy:
        attempts = policy["max_attempts"]
        if isinstance(attempts, bool) or not isinstance(attempts, int) or not 1 <= attempts <= 10_000:
            raise check.fail("policy.max_attempts", f"must be a whole number from 1 to 10000, got {shown(attempts)}")
        out["max_attempts"] = attempts
    _policy_extras(check, policy, out)
    counts = policy.get("counts", "best")
    if counts not in ("best", "last"):
        raise check.fail("policy.counts", f"must be 'best' or 'last', got {shown(counts)}")
    out["counts"] = counts
    out["late_penalty"] = _late_penalty(check, policy.get("late_penalty", []))
    _check_order(check, out)
    return out


def _policy_extras(check: _Checker, policy: dict[str, Any], out: dict[str, Any]) -> None:
    from zoneinfo import available_timezones

    zone = policy.get("time_zone", "UTC")
    if not isinstance(zone, str) or (zone != "UTC" and zone not in available_timezones()):
        raise check.fail("policy.time_zone", f"must be a time zone name such as 'Europe/Paris', got {shown(zone)}")
    out["time_zone"] = zone
    for name, low in (("rate_limit", 0), ("hints_after", 0)):
        if name in policy:
            value = policy[name]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 10_000:
                raise check.fail(f"policy.{name}", f"must be a whole number from {low} to 10000, got {shown(value)}")
            out[name] = value
    reveal = policy.get("reveal", "never")
    if reveal not in REVEALS:
        raise check.fail("policy.reveal", f"must be one of {', '.join(REVEALS)}, got {shown(reveal)}")
    out["reveal"] = reveal
    for name in ("release_before", "release_after"):  # absent: the course's level
        if name in policy:
            if policy[name] not in RELEASES:
                raise check.fail(f"policy.{name}", f"must be one of {', '.join(RELEASES)}, got {shown(policy[name])}")
            out[name] = policy[name]


def _late_penalty(check: _Checker, steps: Any) -> list[list[float]]:
    if not isinstance(steps, list):
        raise check.fail("policy.late_penalty", "must be a list of [hours_late, factor] pairs")
    out = []
    for step in steps:
        if not isinstance(step, list) or len(step) != 2:
            raise check.fail("policy.late_penalty", f"each step must be [hours_late, factor], got {shown(step)}")
        hours = check.number(step[0], "policy.late_penalty hours", minimum=0)
        factor = check.number(step[1], "policy.late_penalty factor", minimum=0)
        if factor > 1:
            raise check.fail("policy.late_penalty", f"factor must be between 0 and 1, got {factor}")
        out.append([hours, factor])
    return sorted(out)


def _check_order(check: _Checker, policy: dict[str, Any]) -> None:
    dates = [(n, policy[n]) for n in ("opens_at", "due_at", "closes_at") if n in policy]
    for (first, a), (second, b) in zip(dates, dates[1:], strict=False):
        if a > b:
            raise check.fail(f"policy.{second}", f"must not be before {first}")


def _variants(check: _Checker, variants: Any, params: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(variants, dict):
        raise check.fail("variants", "must be a table of parameter = {min, max[, step]} or {choices}")
    for name, rule in variants.items():
        label = f"variants.{name}"
        if name not in params:
            raise check.fail(label, "names no parameter in [params]")
        if not isinstance(rule, dict) or set(rule) - {"min", "max", "step", "choices"}:
            raise check.fail(label, "must be {min = …, max = …[, step = …]} or {choices = […]}")
        if "choices" in rule:
            _choices(check, rule["choices"], label)
        elif {"min", "max"} <= set(rule):
            _range(check, rule, label)
        else:
            raise check.fail(label, "must be {min = …, max = …[, step = …]} or {choices = […]}")
    return dict(variants)


def _choices(check: _Checker, choices: Any, label: str) -> None:
    if not isinstance(choices, list) or not choices:
        raise check.fail(f"{label}.choices", "must be a non-empty list")
    for choice in choices:
        for item in _flatten(choice if isinstance(choice, list) else [choice]):
            check.number(item, f"{label}.choices", minimum=-math.inf)


def _range(check: _Checker, rule: dict[str, Any], label: str) -> None:
    low = check.number(rule["min"], f"{label}.min", minimum=-math.inf)
    if check.number(rule["max"], f"{label}.max", minimum=low) == low:
        raise check.fail(label, "max must be greater than min")
    if "step" in rule:
        check.number(rule["step"], f"{label}.step", minimum=0, strict=True)
