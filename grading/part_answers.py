"""The reference answer of one part, read from a variant's analysis: what the preview shows the
instructor and what the answer key shows a student once the reveal policy allows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assignments.models import Part
from chainrule import Analysis
from chainrule.values import format_value


def part_reference_key(part: Part) -> str | None:
    """The analysis key a numeric or formula part asks about (None for code and choice parts)."""
    if part.kind == Part.Kind.NUMERIC:
        return part.key
    if part.kind == Part.Kind.SYMBOLIC:
        return str(part.config.get("of", "")) or None
    return None


def part_answer(part: Part, analysis: Analysis) -> Any:
    """A number, tensor or None; the author's formula (else the value at these values) for a formula
    part; the right option(s) of a choice part; {key: value} of what a code part must produce."""
    if part.kind == Part.Kind.CHOICE:
        answer = part.config["answer"]
        return ", ".join(answer) if isinstance(answer, list) else answer
    key = part_reference_key(part)
    if key is None:
        keys = part.config.get("returns") or part.config.get("reads") or []
        return {name: analysis.parts[name].value for name in keys if name in analysis.parts}
    reference = analysis.parts.get(key)
    if reference is None:
        return None
    if part.kind == Part.Kind.SYMBOLIC and part.config.get("formula"):
        return part.config["formula"]
    return reference.value


def _shown(value: Any) -> str:
    try:
        return format_value(value)
    except (TypeError, ValueError):
        return str(value)


def part_answer_text(part: Part, expected: Any, params: Mapping[str, Any]) -> str:
    """The expected answer written as the part is answered: a formula part's as its formula (with its
    value at these values), a code part's as code (what the program leaves, what the function
    returns), a choice part's by its options, a number as a number. `expected`: the value(s) at the
    seed point of `params` (a code part's {key: value} or, when it reads one, that value)."""
    if part.kind == Part.Kind.CHOICE:
        answer = part.config.get("answer", [])
        return "; ".join(answer) if isinstance(answer, list) else str(answer)
    if part.kind == Part.Kind.SYMBOLIC:
        formula = part.config.get("formula")
        variables = part.config.get("variables") or {}
        at = ", ".join(f"{name} = {_shown(params.get(param))}" for name, param in variables.items() if param in params)
        if formula:
            return f"{formula}   (= {_shown(expected)} at {at})" if at else str(formula)
        return f"{_shown(expected)} (the right formula's value at {at})" if at else _shown(expected)
    if part.kind == Part.Kind.CODE:
        return _code_text(part, expected, params)
    return "None" if expected is None else str(expected)  # a number keeps every digit it has


def _code_text(part: Part, expected: Any, params: Mapping[str, Any]) -> str:
    config = part.code
    keys = config.keys_read(part.key)
    values = expected if isinstance(expected, dict) else {keys[0]: expected} if len(keys) == 1 else {}
    if config.mode == "function":
        args = ", ".join(_shown(params.get(name)) for name in config.args)
        returned = [_shown(values.get(key)) for key in keys]
        result = returned[0] if len(returned) == 1 else f"({', '.join(returned)})"
        return f"{config.function}({args})  # returns {result}"
    width = max((len(key) for key in keys), default=0)
    return "\n".join(f"{key.ljust(width)}  # {_shown(values.get(key))}" for key in keys)
