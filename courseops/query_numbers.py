"""Whole numbers from a query string (`?page=`, `?stuck_after=`), bounded, never an exception.

`str.isdigit()` is true for `²` and `١`, which `int()` refuses (a 500), and for twenty-digit
pages whose offset overflows the database's bigint (another 500): only ASCII digits are read,
and the value is clamped.
"""

from __future__ import annotations

from typing import Any

MAX_DIGITS = 9


def query_int(query: Any, name: str, *, default: int, low: int, high: int) -> int:
    """`query[name]` as an int in [low, high]; `default` when absent or not plain digits."""
    raw = str(query.get(name, "")).strip()
    if not (raw.isascii() and raw.isdigit()):
        return default
    value = int(raw) if len(raw) <= MAX_DIGITS else high
    return min(max(value, low), high)
