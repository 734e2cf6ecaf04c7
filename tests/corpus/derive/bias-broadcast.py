"""corpus-bias-broadcast: h = X @ W + b over a batch of 3, L = (h**2).sum()."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

X = torch.tensor([[1.5, -0.5], [0.5, 2.5], [-1.0, 3.0]])
W = torch.tensor([[0.5, -1.5], [2.5, 0.25]], requires_grad=True)
b = torch.tensor([0.6, -0.75], requires_grad=True)
h = X @ W + b
L = (h**2).sum()
L.backward()
hd = h.detach()
g = 2 * hd  # dL/dh
assert torch.allclose(b.grad, g.sum(0)) and torch.allclose(W.grad, X.T @ g)

c = Cases("corpus-bias-broadcast")
c.graph(L)
c.correct("b.grad", b.grad, answer(b.grad), bare(b.grad), as_tensor(b.grad))
c.mistake("b.grad", g.mean(0), "bias gradient averaged over the batch instead of summed",
          "wrong_local_derivative", edge=["b", "add"])
c.mistake("b.grad", g[0], "bias gradient taken from the first example only (not summed over the batch)",
          "wrong_local_derivative", edge=["b", "add"])
c.mistake("b.grad", g, "gave the per-example gradients (3×2), not summed over the batch", "shape")
c.mistake("b.grad", hd.sum(0), "d(h²)/dh taken as h (the 2 of the power rule dropped)",
          "wrong_local_derivative", edge=["add", "pow"])
c.mistake("b.grad", torch.ones(3, 2).sum(0), "chain rule forgotten at the square: d(h²)/dh taken as 1",
          "wrong_local_derivative", edge=["add", "pow"])

c.correct("W.grad", W.grad, answer(W.grad), as_tensor(W.grad))
c.mistake("W.grad", g.T @ X, "dL/dW written as gᵀ X: the transpose is on the wrong side",
          "wrong_local_derivative", edge=["W", "mm"])
c.mistake("W.grad", torch.ones(2, 3) @ g, "d(XW)/dW taken as 1 (the X factor dropped): each row gets Σ g",
          "wrong_local_derivative", edge=["W", "mm"])
c.mistake("W.grad", X.T @ hd, "d(h²)/dh taken as h (the 2 dropped)",
          "wrong_local_derivative", edge=["add", "pow"])
c.mistake("b.grad", hd.mean(0), "two mistakes: averaged over the batch and d(h²)/dh taken as h; the same "
          "number as one mistake, sum taken as mean (1/6 for each of the 6 entries of h², = 1/3 · 1/2)",
          "two_mistakes", components=[{"kind": "wrong_local_derivative", "edge": ["b", "add"]},
                                      {"kind": "wrong_local_derivative", "edge": ["add", "pow"]}],
          accept=["wrong_local_derivative"])
c.write()
