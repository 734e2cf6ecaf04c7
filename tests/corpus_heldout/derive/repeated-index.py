"""heldout-repeated-index: rows = W[[1, 3, 1]], s = Σ_j rows ⊙ C, L = Σ s²."""

import torch
from heldout_cases import Cases, answer, as_tensor, rounded

Wd = torch.tensor([[0.5, -1.0], [1.5, 0.25], [-0.5, 2.0], [1.0, -1.5]])
C = torch.tensor([[1.0, -0.5], [0.5, 2.0], [-2.0, 1.0]])
ids = [1, 3, 1]
W = Wd.clone().requires_grad_(True)
c = Cases("heldout-repeated-index")
rows = W[torch.tensor(ids)]
s = (rows * C).sum(dim=1)
L = (s**2).sum()
c.graph(L)
L.backward()

sd = (Wd[ids] * C).sum(dim=1)
g_rows = 2 * sd[:, None] * C  # each position's gradient, (3, 2)


def scattered(keep: str = "sum", g: torch.Tensor = g_rows) -> torch.Tensor:
    """Back to the table: added up (right), or the first / the last position of word 1 only."""
    out = torch.zeros(4, 2)
    order = range(3) if keep != "first" else reversed(range(3))
    for pos in order:
        out[ids[pos]] = out[ids[pos]] + g[pos] if keep == "sum" else g[pos]
    return out


assert torch.allclose(W.grad, scattered(), atol=1e-6)
c.forward(Wd[ids], sd, sd**2)

c.correct("W.grad", W.grad, answer(W.grad), as_tensor(W.grad), rounded(W.grad))
c.mistake("W.grad", scattered("last"), "word 1's second use overwrote the first: only the last position counted",
          "wrong_local_derivative", edge=["W", "index"], accept=["accumulation"])
c.mistake("W.grad", scattered("first"), "word 1 counted once, at its first position", "wrong_local_derivative",
          edge=["W", "index"], accept=["accumulation"])
c.mistake("W.grad", g_rows, "gave one gradient per position (3×2) instead of per word of the table (4×2)", "shape")
c.mistake("W.grad", scattered(g=g_rows / 2), "d(s²)/ds taken as s: the 2 dropped", "wrong_local_derivative",
          edge=["sum", "pow"])
c.mistake("W.grad", scattered(g=2 * sd[:, None] * torch.ones(3, 2)), "d(rows ⊙ C)/drows taken as 1: C dropped",
          "wrong_local_derivative", edge=["index", "mul"])
c.write()
