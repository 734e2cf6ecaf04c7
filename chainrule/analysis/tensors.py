"""Tensors to plain values. Single-precision results are rounded to the
digits float32 actually holds, so a bias of 0.1 reads 0.1, not 0.10000000149."""

from __future__ import annotations

import numpy as np
import torch

from chainrule.values import Value, rounded_array, rounded_together

_SIGNIFICANT_DIGITS = {torch.float32: 7, torch.float16: 4, torch.bfloat16: 3}


def tensor_to_value(tensor: torch.Tensor) -> Value:
    digits = _SIGNIFICANT_DIGITS.get(tensor.dtype)
    if digits is None:
        value: Value = tensor.detach().double().tolist()
        return value
    rounded: Value = rounded_array(tensor.detach().double().numpy(), digits).tolist()
    return rounded


def tensor_to_array(tensor: torch.Tensor) -> np.ndarray:
    [array] = tensors_to_arrays([tensor])
    return array


def tensors_to_arrays(tensors: list[torch.Tensor]) -> list[np.ndarray]:
    """tensor_to_array of each, rounding their entries together: an analysis turns thousands of a
    mistake's differences into arrays, each a few entries."""
    arrays = [np.array(tensor.detach().double().numpy(), dtype=float) for tensor in tensors]
    for digits in {_SIGNIFICANT_DIGITS[tensor.dtype] for tensor in tensors if tensor.dtype in _SIGNIFICANT_DIGITS}:
        group = [array for array, tensor in zip(arrays, tensors, strict=True)
                 if _SIGNIFICANT_DIGITS.get(tensor.dtype) == digits]
        _round_together(group, digits)
    return arrays


def _round_together(arrays: list[np.ndarray], digits: int) -> None:
    """Round the nonzero entries of every array in place, all together."""
    places = [np.flatnonzero(array) for array in arrays]
    chunks = rounded_together([array.reshape(-1)[place] for array, place in zip(arrays, places, strict=True)], digits)
    for array, place, chunk in zip(arrays, places, chunks, strict=True):
        array.reshape(-1)[place] = chunk
