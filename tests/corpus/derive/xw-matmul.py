"""corpus-xw-matmul: y = x @ W, L = (y * C).sum()."""

import torch
from corpus_cases import Cases, answer, as_tensor

xd = torch.tensor([[1.5, -0.5], [0.5, 2.5], [-1.0, 3.0]])
Wd = torch.tensor([[0.5, -1.5], [2.5, 0.25]])
C = torch.tensor([[1.5, -2.5], [0.5, 3.0], [-0.5, 1.25]])
x = xd.clone().requires_grad_(True)
W = Wd.clone().requires_grad_(True)
y = x @ W
L = (y * C).sum()
L.backward()
assert torch.allclose(x.grad, C @ Wd.T) and torch.allclose(W.grad, xd.T @ C)

c = Cases("corpus-xw-matmul")
c.correct("x.grad", x.grad, answer(x.grad), as_tensor(x.grad))
c.mistake("x.grad", C @ Wd, "W instead of Wᵀ: x.grad written as g @ W",
          "wrong_local_derivative", edge=["x", "mm"])
c.mistake("x.grad", xd @ Wd, "gave y = x @ W, the forward value, instead of a gradient", "forward_value")
c.mistake("x.grad", torch.ones(3, 2) @ Wd.T, "d(y·C)/dy taken as 1: the C factor dropped",
          "wrong_local_derivative", edge=["mm", "mul"])

c.correct("W.grad", W.grad, answer(W.grad), as_tensor(W.grad))
c.mistake("W.grad", C.T @ xd, "W.grad written as gᵀ x: transposed", "wrong_local_derivative", edge=["W", "mm"])
c.mistake("W.grad", xd.T @ torch.ones(3, 2), "d(y·C)/dy taken as 1: the C factor dropped",
          "wrong_local_derivative", edge=["mm", "mul"])
c.mistake("W.grad", (xd.T @ C).sum(), "summed the gradient into one number", "shape")
c.mistake("W.grad", [[4.5, -1.0], [0.5, 7.25]], "a guess", "unknown")
c.write()
