"""heldout-matrix-chain: Y = A X B, L = Σ Y²; X.grad = Aᵀ (2Y) Bᵀ."""

import torch
from heldout_cases import Cases, answer, as_tensor, rounded

A = torch.tensor([[1.0, 2.0], [-0.5, 1.0]])
Xd = torch.tensor([[0.5, -1.0, 0.25], [1.0, 0.0, -0.5]])
B = torch.tensor([[1.0, 0.0, 0.5], [-1.0, 2.0, 0.0], [0.5, 1.0, -1.0]])
X = Xd.clone().requires_grad_(True)
c = Cases("heldout-matrix-chain")
Y = A @ X @ B
L = (Y**2).sum()
c.graph(L)
L.backward()

G = 2 * (A @ Xd @ B)
assert torch.allclose(X.grad, A.T @ G @ B.T)
c.forward(A @ Xd, A @ Xd @ B)

c.correct("X.grad", X.grad, answer(X.grad), as_tensor(X.grad), rounded(X.grad))
c.mistake("X.grad", A @ G @ B.T, "A instead of Aᵀ on the left", "wrong_local_derivative", edge=["X", "mm"])
c.mistake("X.grad", A.T @ G @ B, "B instead of Bᵀ on the right", "wrong_local_derivative", edge=["mm", "mm"])
c.mistake("X.grad", A @ G @ B, "neither factor transposed", "two_mistakes",
          components=[{"kind": "wrong_local_derivative", "edge": ["X", "mm"]},
                      {"kind": "wrong_local_derivative", "edge": ["mm", "mm"]}])
c.mistake("X.grad", A.T @ G, "the right factor B forgotten going back", "wrong_local_derivative",
          edge=["mm", "mm"])
c.mistake("X.grad", A.T @ G @ B.T / 2, "d(Y²)/dY taken as Y: the 2 dropped", "wrong_local_derivative",
          edge=["mm", "pow"])
c.write()
