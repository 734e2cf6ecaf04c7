"""Plain numeric values shared by every module: a gradient is None, a float or
a nested list of floats. Nothing here imports torch, so answers can be checked
in a process that never loads it."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TypeAlias

import numpy as np

Value: TypeAlias = "float | list[Value] | None"
Shape: TypeAlias = list[int]


class RaggedValue(ValueError):
    """A nested list whose rows differ in length cannot be a tensor."""


def shape_of(value: Value) -> Shape | None:
    """Tensor shape of a value; None has no shape, a float has shape []."""
    if value is None:
        return None
    if not isinstance(value, list):
        return []
    if not value:
        return [0]
    inner = [shape_of(item) for item in value]
    if any(shape != inner[0] for shape in inner):
        raise RaggedValue("rows of different lengths")
    first = inner[0]
    assert first is not None
    return [len(value), *first]


def numel(shape: Shape) -> int:
    return math.prod(shape)


def flatten(value: Value) -> list[float]:
    if value is None:
        return []
    if not isinstance(value, list):
        return [float(value)]
    return [number for item in value for number in flatten(item)]


def shapes_compatible(left: Shape | None, right: Shape | None) -> bool:
    """Equal shapes, or both hold exactly one number: autograd prints a
    one-element gradient as tensor([7.]) and students rightly answer 7."""
    if left is None or right is None:
        return left is right
    return left == right or (numel(left) == 1 and numel(right) == 1)


def numbers_close(left: float, right: float, *, rel_tol: float, abs_tol: float) -> bool:
    return abs(left - right) <= abs_tol + rel_tol * abs(right)


def values_match(answer: Value, expected: Value, *, rel_tol: float, abs_tol: float) -> bool:
    """True when the answer equals the expected value within tolerance
    (relative to the expected value), shapes compared as above."""
    try:
        if not shapes_compatible(shape_of(answer), shape_of(expected)):
            return False
    except RaggedValue:
        return False
    return all(
        numbers_close(a, e, rel_tol=rel_tol, abs_tol=abs_tol)
        for a, e in zip(flatten(answer), flatten(expected), strict=True)
    )


def is_finite_value(value: Value) -> bool:
    return all(math.isfinite(number) for number in flatten(value))


def format_number(number: float) -> str:
    """Short human form: 7 rather than 7.0, at most 6 significant digits."""
    if math.isfinite(number) and number == int(number) and abs(number) < 1e15:
        return str(int(number))
    return f"{number:.6g}"


def format_value(value: Value) -> str:
    if value is None:
        return "None"
    if not isinstance(value, list):
        return format_number(value)
    return "[" + ", ".join(format_value(item) for item in value) + "]"


def format_shape(shape: Shape | None) -> str:
    if shape is None:
        return "no shape (None)"
    if not shape:
        return "a single number"
    return "[" + ", ".join(str(size) for size in shape) + "]"


ORDINAL_WORDS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def ordinal(number: int) -> str:
    """A 1-based position as English reads it: first, second, …, tenth, then 11th, 12th, 21st."""
    if 1 <= number <= len(ORDINAL_WORDS):
        return ORDINAL_WORDS[number - 1]
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def is_number_text(text: str) -> bool:
    """`3`, `-0.5`, `1e-3`: text that is a number as written (a label that needs no `= value`)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


PRINTED_DECIMALS = 4  # torch prints tensors with 4 decimals (tensor([0.2312, 0.6285, 0.1402]))
PRINTED_SIGNIFICANT = 3  # ... and the largest entry must still carry this many significant digits (tensor(0.0488))
_NUMBER = re.compile(r"(?<![\w.])(\d+\.?\d*|\.\d+)(?:[eE]([-+]?\d+))?")


def decimals_written(number: float) -> int:
    """Decimals of the number as its shortest round-trip form shows them (0.1402 → 4, 1.2345e-04 → 8,
    7.0 → 0): what a student typed, except trailing zeros (0.2000 → 1). Prefer text_decimals."""
    text = repr(float(number))
    mantissa, _, exponent = text.partition("e")
    fraction = mantissa.partition(".")[2].rstrip("0")  # repr(7.0) is "7.0": no decimal written
    return max(len(fraction) - int(exponent or 0), 0)


def text_decimals(text: str) -> list[int]:
    """The decimals of each number literal in an answer's text, in reading order, trailing zeros
    counted (`tensor(0.2000)` → [4], `1.2345e-04` → [8]). A text that is not one literal per entry
    (`1/2`) gives a list of another length, which printed_rounding and rounded_off ignore."""
    found = []
    for match in _NUMBER.finditer(text):
        digits, exponent = match.group(1), match.group(2)
        fraction = digits.partition(".")[2]
        found.append(max(len(fraction) - int(exponent or 0), 0))
    return found


def written_places(answer: Value, expected: Value,
                   decimals: Sequence[int] | None = None) -> tuple[list[float], list[float], int] | None:
    """The answer's and the expected entries and the fewest decimals an entry was written to (`decimals`:
    each entry's, from the answer's text; else read from the numbers, without trailing zeros); None when
    they do not pair up entry by entry or are not all finite."""
    given, wanted = flatten(answer), flatten(expected)
    if not given or len(given) != len(wanted) or not all(math.isfinite(n) for n in given + wanted):
        return None
    written = list(decimals) if decimals is not None else [decimals_written(number) for number in given]
    if len(written) != len(given):
        return None
    return given, wanted, min(written)


def printed_rounding(answer: Value, expected: Value, decimals: Sequence[int] | None = None) -> tuple[float, int]:
    """Half a unit of the last decimal the answer was written to, and those decimals, when it reads like a
    printed tensor, else (0, 0). An answer pasted from print(x.grad) then counts as exact to what it shows:
    0.1402 for 0.140244 is off by 3e-4 relative, beyond the default rel_tol of 1e-4, yet torch printed it.
    Like torch's fixed-point print: every entry has at least PRINTED_DECIMALS decimals, every nonzero expected
    entry is at least one unit of the last decimal (4e-05 prints as 4.0000e-05, never as 0.0000), and the
    largest keeps PRINTED_SIGNIFICANT significant digits."""
    written = written_places(answer, expected, decimals)
    if written is None:
        return 0.0, 0
    _, wanted, places = written
    unit = 10.0 ** -places
    largest = max(abs(number) for number in wanted)
    if places < PRINTED_DECIMALS or largest < 10.0 ** (PRINTED_SIGNIFICANT - 1 - places) \
            or any(0 < abs(number) < unit for number in wanted):
        return 0.0, 0
    return 0.5 * unit * (1 + 1e-9), places


def rounded_off(answer: Value, expected: Value, decimals: Sequence[int] | None = None) -> int | None:
    """The decimals the answer was written to when every entry is the expected one rounded to them
    (and the answer has at least one decimal), else None: right, but too few digits to tell."""
    written = written_places(answer, expected, decimals)
    if written is None:
        return None
    given, wanted, places = written
    unit = 0.5 * 10.0 ** -places * (1 + 1e-9)
    if places < 1 or not all(abs(a - e) <= unit for a, e in zip(given, wanted, strict=True)):
        return None
    return places


def rounded_array(array: np.ndarray, digits: int, *, only: np.ndarray | None = None) -> np.ndarray:
    """Each entry as `float(f"{entry:.{digits}g}")` (a copy), the same double bit for bit. Zeros stay
    as they are. `only` (flat indices) limits the rounding to those entries."""
    out = np.array(array, dtype=float, order="C")  # so that `flat` is a view: a transposed array's too
    flat = out.reshape(-1)
    index = np.flatnonzero(flat) if only is None else np.asarray(only, dtype=np.intp)
    flat[index] = _rounded(flat[index], digits)
    return out


def rounded_together(chunks: list[np.ndarray], digits: int) -> list[np.ndarray]:
    """rounded_array of each flat array, in one pass over all of their entries: an analysis rounds
    thousands of a mistake's few changed entries, and each pass has a fixed cost."""
    if not chunks:
        return []
    entries = rounded_array(np.concatenate(chunks), digits)
    ends = np.cumsum([chunk.size for chunk in chunks])
    return np.split(entries, ends[:-1])


_ARITHMETIC_FROM = 100  # entries; fewer are formatted one by one, which is quicker for them
_EXACT_POWERS = 22  # 10**k is exact in a double for k <= 22
_NEAR_HALF = 1e-3  # scaled entries this near a rounding tie are formatted one by one


def _rounded(entries: np.ndarray, digits: int) -> np.ndarray:
    """Rounding to `digits` significant digits as arithmetic, for thousands of entries at once (a
    mutation's difference at a wide layer's weights). The decimal mantissa M = round(x·10^p) is found
    with one multiplication whose error (< 10^digits · 2^-53, under 2e-4 for 12 digits) cannot move it
    past a rounding tie unless the scaled value is within _NEAR_HALF of one; then M/10^p (or M·10^-p)
    with M and 10^|p| exact is one correctly rounded operation: the double nearest the decimal, as
    float() of the formatted text gives. Entries where an assumption fails (a tie too near, an
    exponent off by one, a power past 10^22, not finite) are formatted one by one."""
    if digits > 15 or entries.size < _ARITHMETIC_FROM:
        return np.array([float(f"{entry:.{digits}g}") for entry in entries.tolist()], dtype=float)
    out = np.array(entries, dtype=float)
    magnitude = np.abs(out)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        exponent = np.floor(np.log10(magnitude))
        power = digits - 1 - exponent  # the scaled value has `digits` digits before the point
        finite = np.isfinite(out) & (magnitude > 0) & (np.abs(power) <= _EXACT_POWERS)
        ten = 10.0 ** np.where(finite, np.abs(power), 0)
        scaled = np.where(power >= 0, magnitude * ten, magnitude / ten)
        fraction = scaled - np.floor(scaled)
        fine = (finite & (np.abs(fraction - 0.5) > _NEAR_HALF)
                & (scaled >= 10.0 ** (digits - 1)) & (scaled < 10.0 ** digits))
        mantissa = np.rint(scaled)
        rounded = np.copysign(np.where(power >= 0, mantissa / ten, mantissa * ten), out)
    out[fine] = rounded[fine]
    slow = np.flatnonzero(~fine)
    if slow.size:
        out[slow] = [float(f"{entry:.{digits}g}") for entry in entries[slow].tolist()]
    return out


SPARSE_MIN_ENTRIES = 8  # a value this small is stored whole: shorter, and readable in the document


def numbers_array(value: Value) -> np.ndarray | None:
    """A nested list of numbers as an array of floats (a part's reference value, once per part, for
    `value_changes` and `with_changes`); None for anything else (None, a bare number, ragged lists)."""
    if not isinstance(value, list):
        return None
    try:
        return np.array(value, dtype=float)
    except (TypeError, ValueError):
        return None


def value_changes(value: Value | np.ndarray, reference: np.ndarray | None) -> list[list[float]] | None:
    """`value` as the entries where it differs from `reference` (`numbers_array` of the part's reference
    value) as [[flat index, entry], ...], when it has the reference's shape and differs in at most half
    of its entries; else None (store it whole). A wrong local derivative deep in a large graph changes a
    few entries of a large gradient, and an analysis holds thousands of them."""
    given = value if isinstance(value, np.ndarray) else numbers_array(value)
    if given is None or reference is None or given.shape != reference.shape or given.size < SPARSE_MIN_ENTRIES:
        return None
    changed = np.flatnonzero(given.reshape(-1) != reference.reshape(-1))
    if 2 * changed.size > given.size:
        return None
    return [[int(index), entry] for index, entry in zip(changed.tolist(), given.reshape(-1)[changed].tolist(),
                                                        strict=True)]


def with_changes(reference: np.ndarray | None, changes: list[list[float]]) -> Value:
    """The value `value_changes` described: the reference with those entries replaced. A document read
    from elsewhere is checked: no reference array, an index outside it or an entry that is not a number
    is a ValueError."""
    if reference is None:
        raise ValueError("changes to a reference that is not an array of numbers")
    wanted = reference.copy()
    flat = wanted.reshape(-1)
    if not isinstance(changes, list):
        raise ValueError("changes must be a list of [index, entry] pairs")
    for change in changes:
        if not (isinstance(change, list) and len(change) == 2 and type(change[0]) is int
                and 0 <= change[0] < flat.size and isinstance(change[1], (int, float))
                and not isinstance(change[1], bool)):
            raise ValueError(f"malformed change {change!r:.80}")
        flat[change[0]] = float(change[1])
    value: Value = wanted.tolist()
    return value
