"""corpus-sigmoid-bce: p = sigmoid(w x + b), L = binary_cross_entropy(p, t) (mean of 3)."""

import torch
import torch.nn.functional as F
from corpus_cases import Cases, answer, as_tensor

x = torch.tensor([1.5, -0.5, 0.75])
t = torch.tensor([1.0, 0.0, 1.0])
w0, b0 = 0.8, -0.2
w = torch.tensor(w0, requires_grad=True)
b = torch.tensor(b0, requires_grad=True)
p = torch.sigmoid(w * x + b)
L = F.binary_cross_entropy(p, t)
L.backward()
pd = p.detach()
n = 3
dp = -(t / pd - (1 - t) / (1 - pd)) / n  # dL/dp
assert torch.allclose(b.grad, ((pd - t) / n).sum()) and torch.allclose(w.grad, ((pd - t) * x / n).sum())
path_w = ["w", "mul", "add", "sigmoid", "binary_cross_entropy", "L"]

c = Cases("corpus-sigmoid-bce")
c.graph(L)
c.forward(pd, w0 * x, w0 * x + b0, L.detach())
c.correct("w.grad", w.grad, answer(w.grad), as_tensor(w.grad))
c.mistake("w.grad", ((pd - t) * x).sum(), "the 1/N of the mean reduction forgotten", "wrong_local_derivative",
          edge=["sigmoid", "binary_cross_entropy"])
c.mistake("w.grad", (dp * x).sum(), "sigmoid′ taken as 1 (chain rule forgotten at the sigmoid)",
          "wrong_local_derivative", edge=["add", "sigmoid"])
c.mistake("w.grad", (dp * pd * x).sum(), "sigmoid′ taken as σ (the (1 - σ) dropped)", "wrong_local_derivative",
          edge=["add", "sigmoid"])
c.mistake("w.grad", ((pd - t) / n).sum(), "d(w·x)/dw taken as 1: the x factor dropped", "wrong_local_derivative",
          edge=["w", "mul"])
c.mistake("w.grad", ((t - pd) * x / n).sum(), "sign flipped: (t - p) for (p - t)", "sign_error", paths=[path_w])

c.correct("b.grad", b.grad, answer(b.grad), as_tensor(b.grad), f"{float(b.grad):.5f}")
c.mistake("b.grad", (pd - t).sum(), "the 1/N of the mean reduction forgotten", "wrong_local_derivative",
          edge=["sigmoid", "binary_cross_entropy"])
c.mistake("b.grad", (dp * pd).sum(), "sigmoid′ taken as σ (the (1 - σ) dropped)", "wrong_local_derivative",
          edge=["add", "sigmoid"])
c.mistake("b.grad", (pd - t) / n, "gave each example's share instead of their sum", "shape")
c.write()
