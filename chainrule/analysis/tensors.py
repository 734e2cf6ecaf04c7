"""Tensors to plain values. Single-precision results are rounded to the
digits float32 actually holds, so a bias of 0.1 reads 0.1, not 0.10000000149."""

from __future__ import annotations

import numpy as np
import torch

from chainrule.values import Value

_SIGNIFICANT_DIGITS = {torch.float32: 7, torch.float16: 4, torch.bfloat16: 3}


def tensor_to_value(tensor: torch.Tensor) -> Value:
    digits = _SIGNIFICANT_DIGITS.get(tensor.dtype)
    value: Value = tensor.detach().double().tolist()
    return value if digits is None else _rounded(value, digits)


def tensor_to_array(tensor: torch.Tensor) -> np.ndarray:
    return np.asarray(tensor_to_value(tensor), dtype=float)


def _rounded(value: Value, digits: int) -> Value:
    if isinstance(value, list):
        return [_rounded(item, digits) for item in value]
    if value is None:
        return None
    return float(f"{value:.{digits}g}")
