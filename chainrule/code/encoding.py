"""Student objects as plain JSON values, inside the sandbox job.

Imported by chainrule.code.harness inside the job: it imports nothing else from
chainrule, and torch only where it exists. Tensors, numpy arrays,
numbers and (nested) tuples or lists become None, floats or nested lists of
floats; anything else, or anything too large or not finite, is a
StudentError whose message is written for the student."""

from __future__ import annotations

import math
import numbers
from typing import Any

MAX_NUMBERS = 10_000  # per returned or read value
MAX_DEPTH = 4


class StudentError(Exception):
    """A problem with the student's code; str() is the message for them."""


def count_text(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def with_article(noun: str) -> str:
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def returned_values(returned: Any, request: dict[str, Any]) -> dict[str, Any]:
    name, count = request["function"], request["returns"]
    if count == 1:
        return {"0": plain_value(returned, f"the value {name} returns", [0])}
    shape = getattr(returned, "shape", None)
    if isinstance(returned, (tuple, list)) and len(returned) == count:
        items = list(returned)
    elif shape is not None and len(shape) >= 1 and shape[0] == count:
        items = [returned[index] for index in range(count)]
    else:
        sequence = isinstance(returned, (tuple, list))
        given = count_text(len(returned), "value") if sequence else with_article(type(returned).__name__)
        raise StudentError(f"{name} must return {count} values, as in {request['signature']}; it returned {given}.")
    used = [0]
    return {str(i): plain_value(item, f"value {i + 1} that {name} returns", used) for i, item in enumerate(items)}


def plain_value(found: Any, where: str, used: list[int], depth: int = 0) -> Any:
    """None, a float or nested lists of floats; StudentError for anything else."""
    if found is None:
        return None
    if isinstance(found, bool) or not isinstance(found, (numbers.Real, list, tuple)) and not hasattr(found, "dtype"):
        raise StudentError(f"{where} is {with_article(type(found).__name__)}, not a number, a tensor or an array.")
    if isinstance(found, numbers.Real):
        return _counted(_finite(float(found), where), used, where)
    if isinstance(found, (list, tuple)):
        if depth >= MAX_DEPTH:
            raise StudentError(f"{where} is nested too deeply to be a gradient.")
        return [plain_value(item, where, used, depth + 1) for item in found]
    return _array_value(found, where, used)


def _array_value(found: Any, where: str, used: list[int]) -> Any:
    import numpy as np

    try:
        import torch
    except ImportError:  # a by-hand part's job: torch is not even installed there
        torch = None  # type: ignore[assignment]
    if torch is not None and isinstance(found, torch.Tensor):
        if found.is_complex():
            raise StudentError(f"{where} is complex; a gradient here is real.")
        array = found.detach().to("cpu").double().numpy()
    elif isinstance(found, (np.ndarray, np.generic)) and np.asarray(found).dtype.kind in "biuf":
        array = np.asarray(found, dtype=float)
    else:
        raise StudentError(f"{where} is {with_article(type(found).__name__)} of {found.dtype}, not of numbers.")
    _counted(0.0, used, where, array.size)
    if not np.all(np.isfinite(array)):
        raise StudentError(f"{where} is not finite (nan or inf).")
    return array.tolist()


def _counted(value: float, used: list[int], where: str, size: int = 1) -> float:
    used[0] += size
    if used[0] > MAX_NUMBERS:
        raise StudentError(f"{where} holds more than {MAX_NUMBERS} numbers.")
    return value


def _finite(value: float, where: str) -> float:
    if not math.isfinite(value):
        raise StudentError(f"{where} is not finite (nan or inf).")
    return value
