"""heldout-attention: L = (softmax(K q / √3) @ V) @ u."""

import math

import torch
from heldout_cases import Cases, answer, as_tensor, bare, rounded

qd = torch.tensor([0.5, -1.0, 1.5])
Kd = torch.tensor([[1.0, 0.5, -1.0], [-0.5, 2.0, 0.0], [0.25, -1.0, 1.5]])
V = torch.tensor([[2.0, -1.0, 0.5], [0.0, 1.5, -2.0], [1.0, 1.0, 1.0]])
u = torch.tensor([1.0, -0.5, 2.0])
q, K = qd.clone().requires_grad_(True), Kd.clone().requires_grad_(True)
c = Cases("heldout-attention")
s = K @ q / math.sqrt(3)
a = torch.softmax(s, dim=0)
o = a @ V
L = o @ u
c.graph(L)
L.backward()

# by hand, backwards from L
ad = a.detach()
g_a = V @ u                                   # d(a V u)/da
g_s = ad * (g_a - (ad * g_a).sum())           # the softmax's vector-Jacobian product
g_ks = g_s / math.sqrt(3)                     # through the division by √d
assert torch.allclose(q.grad, Kd.T @ g_ks, atol=1e-6) and torch.allclose(K.grad, torch.outer(g_ks, qd), atol=1e-6)
c.forward(s.detach() * math.sqrt(3), o.detach())

c.correct("q.grad", q.grad, answer(q.grad), bare(q.grad), as_tensor(q.grad))
c.mistake("q.grad", Kd.T @ g_s, "the 1/√d scale forgotten going back", "wrong_local_derivative", edge=["mv", "div"])
c.mistake("q.grad", Kd.T @ g_s / 3, "divided by d instead of √d going back", "wrong_local_derivative",
          edge=["mv", "div"])
c.mistake("q.grad", Kd.T @ (ad * (1 - ad) * g_a) / math.sqrt(3),
          "softmax′ taken as the diagonal a(1 - a): the cross terms -aᵢaⱼ forgotten", "wrong_local_derivative",
          edge=["div", "softmax"])
c.mistake("q.grad", Kd.T @ g_a / math.sqrt(3), "the softmax's derivative forgotten (taken as 1)",
          "wrong_local_derivative", edge=["div", "softmax"])
c.mistake("q.grad", Kd @ g_ks, "K instead of Kᵀ: the gradient of K q with respect to q is Kᵀ g",
          "wrong_local_derivative", edge=["q", "mv"])
c.mistake("q.grad", Kd.T @ (ad * (V.T @ u - (ad * (V.T @ u)).sum())) / math.sqrt(3),
          "Vᵀ u instead of V u for the gradient of a @ V", "wrong_local_derivative", edge=["unsqueeze", "mm"])

c.correct("K.grad", K.grad, answer(K.grad), as_tensor(K.grad), rounded(K.grad))
c.mistake("K.grad", torch.outer(qd, g_ks), "q gᵀ instead of g qᵀ: the outer product transposed",
          "wrong_local_derivative", edge=["K", "mv"])
c.mistake("K.grad", torch.outer(g_s, qd), "the 1/√d scale forgotten going back", "wrong_local_derivative",
          edge=["mv", "div"])
c.mistake("K.grad", g_ks, "gave the gradient of the scores (3 numbers) for the 3×3 matrix K", "shape")
c.write()
