"""TOML that instructors send through the web (an imported file, the form's params, variants and
config boxes), read so that any text gives a CatalogError, never a 500.

`tomllib` recurses once per nesting level, so `a = [[[…]]]` 5,000 deep raised RecursionError in
the request; and TOML may spell a NUL (`"\\u0000"`), which PostgreSQL cannot store (DataError on
save). Both are refused here with the file and field named, as is an integer literal longer than
Python converts from text (4,300 digits: tomllib raised a bare ValueError).
"""

from __future__ import annotations

import tomllib
from typing import Any

from catalog.errors import CatalogError
from infra.nested_data import HAS_NUL, TOO_DEEP, nested_problem, nul_problem

MAX_DEPTH = 32  # tables and arrays inside one another; the catalog needs a handful
MAX_INT_BITS = 14_000  # ≈ 4,200 decimal digits: a hex or binary literal past it cannot even be printed
TOO_MANY_DIGITS = "too many digits"
PROBLEMS = {TOO_DEEP: f"is nested too deeply (at most {MAX_DEPTH} levels)",
            HAS_NUL: "contains a NUL character (\\u0000), which no field accepts",
            TOO_MANY_DIGITS: "has a number with too many digits to read"}


def toml_loads(text: str, *, path: str, field: str) -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(path, field, f"is not valid TOML ({exc})") from None
    except RecursionError:
        raise CatalogError(path, field, PROBLEMS[TOO_DEEP]) from None
    except ValueError:  # int("9" * 5000): Python's limit on integer text, raised inside tomllib
        raise CatalogError(path, field, PROBLEMS[TOO_MANY_DIGITS]) from None
    problem = _shape_problem(data)
    if problem:
        raise CatalogError(path, field, problem)
    return data


def _shape_problem(data: Any) -> str | None:
    problem = nested_problem(data, max_depth=MAX_DEPTH, text_problem=nul_problem, int_problem=_int_problem)
    return None if problem is None else PROBLEMS[problem]


def _int_problem(number: int) -> str | None:
    """A hex, octal or binary TOML integer escapes Python's 4,300-digit limit on reading, not on printing."""
    return TOO_MANY_DIGITS if number.bit_length() > MAX_INT_BITS else None
