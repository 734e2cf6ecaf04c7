"""Untrusted nested data (a JSON body, a TOML file, an LTI id_token's claims) walked without
recursion: the first container deeper than allowed, or the first text a caller refuses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

TOO_DEEP = "too deep"
HAS_NUL = "has NUL"


def nested_problem(data: Any, *, max_depth: int, text_problem: Callable[[str], str | None],
                   int_problem: Callable[[int], str | None] | None = None) -> str | None:
    """TOO_DEEP for a dict or list nested more than `max_depth` inside `data`, else what
    `text_problem` says of the first key or string it refuses (or `int_problem` of an int), else None.
    Linear in the size."""
    pending: list[tuple[Any, int]] = [(data, 0)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, dict | list):
            if depth > max_depth:
                return TOO_DEEP
            items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
            pending.extend((item, depth + 1) for item in items)
        elif isinstance(value, str) and (problem := text_problem(value)):
            return problem
        elif int_problem is not None and isinstance(value, int) and not isinstance(value, bool) \
                and (problem := int_problem(value)):
            return problem
    return None


def nul_problem(text: str) -> str | None:
    return HAS_NUL if "\x00" in text else None


def nested_nul_problem(data: Any, *, max_depth: int) -> str | None:
    """TOO_DEEP, HAS_NUL (a NUL in a key or a string: PostgreSQL cannot store it) or None."""
    return nested_problem(data, max_depth=max_depth, text_problem=nul_problem)
