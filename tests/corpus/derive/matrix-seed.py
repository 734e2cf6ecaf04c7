"""corpus-matrix-seed: y = W @ x, y.backward(v) with v = [1.5, -0.5]."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

Wd = torch.tensor([[0.5, -1.5, 2.5], [1.25, 0.25, -0.75]])
xd = torch.tensor([1.5, -0.5, 0.75])
v = torch.tensor([1.5, -0.5])
W, x = Wd.clone().requires_grad_(True), xd.clone().requires_grad_(True)
y = W @ x
y.backward(v)
assert torch.allclose(x.grad, Wd.T @ v) and torch.allclose(W.grad, torch.outer(v, xd))

c = Cases("corpus-matrix-seed")
c.forward(Wd @ xd)
c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", Wd.T @ torch.ones(2), "the seed ignored (taken as ones): column sums of W", "seed_vector")
c.mistake("x.grad", Wd.T @ (v * v), "the seed applied twice", "seed_vector")
c.mistake("x.grad", (Wd.T @ v).sum(), "summed Jᵀv into one number", "shape")

c.correct("W.grad", W.grad, answer(W.grad), as_tensor(W.grad))
c.mistake("W.grad", torch.outer(torch.ones(2), xd), "the seed ignored: every row is x", "seed_vector")
c.mistake("W.grad", torch.outer(v * v, xd), "the seed applied twice", "seed_vector")
c.mistake("W.grad", torch.outer(v, torch.ones(3)), "d(W x)/dW taken as 1: the x factor dropped",
          "wrong_local_derivative", edge=["W", "mv"])
c.write()
