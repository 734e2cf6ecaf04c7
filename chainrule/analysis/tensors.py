"""Tensors to plain values. Single-precision results are rounded to the
digits float32 actually holds, so a bias of 0.1 reads 0.1, not 0.10000000149."""

from __future__ import annotations

import numpy as np
import torch

from chainrule.values import Value, rounded_array

_SIGNIFICANT_DIGITS = {torch.float32: 7, torch.float16: 4, torch.bfloat16: 3}


def tensor_to_value(tensor: torch.Tensor) -> Value:
    digits = _SIGNIFICANT_DIGITS.get(tensor.dtype)
    if digits is None:
        value: Value = tensor.detach().double().tolist()
        return value
    rounded: Value = rounded_array(tensor.detach().double().numpy(), digits).tolist()
    return rounded


def tensor_to_array(tensor: torch.Tensor) -> np.ndarray:
    """The tensor as float64, its nonzero single-precision entries rounded to the digits they hold."""
    array = np.array(tensor.detach().double().numpy(), dtype=float)
    digits = _SIGNIFICANT_DIGITS.get(tensor.dtype)
    return array if digits is None else rounded_array(array, digits)


def sparse_arrays(tensors: list[torch.Tensor]) -> list[tuple[np.ndarray, np.ndarray]]:
    """tensor_to_array of each, the same bit for bit, with the flat indices of its entries that are not
    zero (NaN is not zero). An analysis turns thousands of a mistake's differences into arrays, most of
    them zero but for a few entries, so those of one dtype are converted and rounded together, only their
    nonzero entries: one array holds them all, and each is a view of its own stretch of it (never written
    to afterwards)."""
    found: list[tuple[np.ndarray, np.ndarray]] = [(np.empty(0), np.empty(0, dtype=np.intp))] * len(tensors)
    by_dtype: dict[torch.dtype, list[int]] = {}
    for index, tensor in enumerate(tensors):
        by_dtype.setdefault(tensor.dtype, []).append(index)
    for dtype, indices in by_dtype.items():
        joined = torch.cat([tensors[index].detach().reshape(-1) for index in indices])
        written = joined != 0
        if joined.is_floating_point():
            written |= torch.signbit(joined)  # -0.0 reads "-0.0"
        place = torch.nonzero(written).reshape(-1).numpy()
        entries = np.array(joined[place].double().numpy(), dtype=float)
        digits = _SIGNIFICANT_DIGITS.get(dtype)
        if digits is not None:
            entries = rounded_array(entries, digits)
        flat = np.zeros(joined.numel())  # no work until written: only the nonzero entries are
        flat[place] = entries
        changed = place[entries != 0]  # rounding leaves a nonzero entry nonzero
        starts = np.cumsum([0] + [tensors[index].numel() for index in indices])
        bounds = np.searchsorted(changed, starts)
        for number, index in enumerate(indices):
            start, end = starts[number], starts[number + 1]
            found[index] = (flat[start:end].reshape(tensors[index].shape),
                            changed[bounds[number]:bounds[number + 1]] - start)
    return found
