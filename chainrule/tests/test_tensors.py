"""Tensors to arrays: converting thousands of a mistake's differences at once gives each the array
converting it alone gives, bit for bit."""

from __future__ import annotations

import numpy as np
import torch

from chainrule.analysis.tensors import sparse_arrays, tensor_to_array


def _same_bits(left: np.ndarray, right: np.ndarray) -> bool:
    return left.shape == right.shape and left.dtype == right.dtype and left.tobytes() == right.tobytes()


def test_converting_together_gives_each_tensor_its_own_array_bit_for_bit() -> None:
    tensors = [
        torch.tensor([0.1, -0.0, float("nan"), float("inf"), 0.0, -float("inf")]),  # float32: 7 digits
        torch.tensor(0.30000001192092896),  # 0-d
        torch.tensor([[1e-30, 2.5], [0.0, -7.123456789]], dtype=torch.float64),  # not rounded
        torch.tensor([1, 0, -2]),
        torch.tensor([True, False]),
        torch.zeros(0),
        torch.zeros(3, 4),
        torch.tensor([0.30000001, -0.0], dtype=torch.bfloat16),
        torch.tensor([0.1, 1 / 3], dtype=torch.float16),
        torch.linspace(-1, 1, 257)[torch.arange(257) % 64 == 3],  # a few entries of a wide layer
        torch.tensor([-0.0], dtype=torch.float64),
        torch.tensor([[0.1, 0.2, 0.3], [1.1, 1.2, 1.3]]).t(),  # transposed: not contiguous
    ]
    together = sparse_arrays(tensors)
    assert len(together) == len(tensors)
    for tensor, (array, changed) in zip(tensors, together, strict=True):
        alone = tensor_to_array(tensor)
        assert _same_bits(array, alone), tensor
        assert changed.tolist() == np.flatnonzero(alone).tolist(), tensor  # NaN counts, -0.0 does not
    assert together[0][0].tolist()[:2] == [0.1, -0.0]  # 0.1 reads 0.1, and -0.0 keeps its sign
    assert str(together[1][0]) == "0.3"
    assert sparse_arrays([]) == []


def test_a_transposed_gradient_is_rounded_like_any_other() -> None:
    """W.t() in a program gives a gradient whose entries are not in memory order: its float32 noise
    is rounded away too (0.2 reads 0.2, not 0.20000000298)."""
    transposed = torch.tensor([[0.1, 0.2, 0.3], [1.1, 1.2, 1.3]]).t()
    for array in (tensor_to_array(transposed), sparse_arrays([transposed])[0][0]):
        assert array.tolist() == [[0.1, 1.1], [0.2, 1.2], [0.3, 1.3]]


def test_many_sparse_differences_come_back_with_their_shapes_and_entries() -> None:
    generator = torch.Generator().manual_seed(3)
    tensors = []
    for row in range(40):
        delta = torch.zeros(16, 16)
        delta[row % 16] = torch.randn(16, generator=generator)
        tensors.append(delta)
    for tensor, (array, changed) in zip(tensors, sparse_arrays(tensors), strict=True):
        assert array.shape == (16, 16)
        assert np.allclose(array, tensor.double().numpy(), rtol=1e-6, atol=0)
        assert changed.tolist() == torch.nonzero(tensor.reshape(-1)).reshape(-1).tolist()
