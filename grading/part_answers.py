"""The reference answer of one part, read from a variant's analysis: what the preview shows the
instructor and what the answer key shows a student once the reveal policy allows."""

from __future__ import annotations

from typing import Any

from assignments.models import Part
from chainrule import Analysis


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
