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
    digits = _SIGNIFICANT_DIGITS.get(tensor.dtype)
    array = np.array(tensor.detach().double().numpy(), dtype=float)
    return array if digits is None else rounded_array(array, digits)
