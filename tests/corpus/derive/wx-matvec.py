"""corpus-wx-matvec: y = W @ x (W 2×3), L = (y**2).sum()."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

Wd = torch.tensor([[0.5, -1.5, 2.5], [1.5, 0.25, -0.5]])
xd = torch.tensor([1.5, -0.5, 0.75])
W = Wd.clone().requires_grad_(True)
x = xd.clone().requires_grad_(True)
y = W @ x
L = (y**2).sum()
L.backward()
yd = y.detach()
g = 2 * yd
assert torch.allclose(x.grad, Wd.T @ g) and torch.allclose(W.grad, torch.outer(g, xd))

c = Cases("corpus-wx-matvec")
c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", Wd.T @ yd, "d(y²)/dy taken as y (the 2 dropped)", "wrong_local_derivative", edge=["mv", "pow"])
c.mistake("x.grad", Wd.T @ torch.ones(2), "d(y²)/dy taken as 1 (chain rule forgotten at the square)",
          "wrong_local_derivative", edge=["mv", "pow"])
c.mistake("x.grad", g.sum() * torch.ones(3), "d(W @ x)/dx taken as 1 (the W factor dropped)",
          "wrong_local_derivative", edge=["x", "mv"])
c.mistake("x.grad", (Wd.T @ g).sum(), "summed the gradient into one number", "shape")

c.correct("W.grad", W.grad, answer(W.grad), as_tensor(W.grad))
c.mistake("W.grad", torch.outer(g, torch.ones(3)), "d(W @ x)/dW taken as 1: the x factor dropped",
          "wrong_local_derivative", edge=["W", "mv"])
c.mistake("W.grad", torch.outer(yd, xd), "d(y²)/dy taken as y (the 2 dropped)",
          "wrong_local_derivative", edge=["mv", "pow"])
c.mistake("W.grad", torch.outer(xd, g), "outer product in the wrong order: x gᵀ (3×2) instead of g xᵀ", "shape")
c.write()
