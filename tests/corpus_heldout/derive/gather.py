"""heldout-gather: picked = Z.gather(1, idx), L = Σ (picked - 1)²."""

import torch
from heldout_cases import Cases, answer, as_tensor, rounded

Zd = torch.tensor([[0.5, -1.0, 2.0, 0.25], [1.5, 0.0, -0.5, 1.0], [-2.0, 0.75, 1.0, 3.0]])
idx = torch.tensor([[2], [0], [1]])
Z = Zd.clone().requires_grad_(True)
c = Cases("heldout-gather")
picked = Z.gather(1, idx)
L = ((picked - 1.0) ** 2).sum()
c.graph(L)
L.backward()

g = 2 * (Zd.gather(1, idx) - 1.0)  # (3, 1): each picked score's gradient


def placed(at: list[tuple[int, int]], values: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(3, 4)
    for (row, col), v in zip(at, values.flatten().tolist(), strict=True):
        out[row, col] += v
    return out


right_places = [(0, 2), (1, 0), (2, 1)]
assert torch.allclose(Z.grad, placed(right_places, g))
c.forward(Zd.gather(1, idx), Zd.gather(1, idx) - 1)

c.correct("Z.grad", Z.grad, answer(Z.grad), as_tensor(Z.grad), rounded(Z.grad))
c.mistake("Z.grad", g, "gave the gradient of the picked scores (3×1) for the 3×4 matrix", "shape")
c.mistake("Z.grad", placed([(2, 0), (0, 0), (1, 0)], g),
          "scattered back along dim 0: the index read as a row number", "wrong_local_derivative", edge=["Z", "gather"])
c.mistake("Z.grad", g.expand(3, 4), "each row's gradient copied to all four classes", "wrong_local_derivative",
          edge=["Z", "gather"])
c.mistake("Z.grad", placed([(0, 3), (1, 1), (2, 2)], g),
          "the class indices read from 1: every gradient one column late", "wrong_local_derivative",
          edge=["Z", "gather"])
c.mistake("Z.grad", placed(right_places, g / 2), "d(e²)/de taken as e: the 2 dropped", "wrong_local_derivative",
          edge=["sub", "pow"])
c.write()
