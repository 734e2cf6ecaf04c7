"""corpus-stack: rows = stack([u, 2.5 v]), L = ((rows @ m)**2).sum()."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

ud = torch.tensor([1.5, -0.5])
vd = torch.tensor([0.5, 1.25])
m = torch.tensor([0.8, -1.5])
u, v = ud.clone().requires_grad_(True), vd.clone().requires_grad_(True)
rows = torch.stack([u, 2.5 * v])
L = ((rows @ m) ** 2).sum()
L.backward()
s = torch.stack([ud, 2.5 * vd]) @ m  # the two row scores
row_grad = torch.outer(2 * s, m)  # gradient arriving at rows
assert torch.allclose(u.grad, row_grad[0]) and torch.allclose(v.grad, 2.5 * row_grad[1])

c = Cases("corpus-stack")
c.forward(s, s**2, 2.5 * vd, m)
c.correct("u.grad", u.grad, answer(u.grad), bare(u.grad), as_tensor(u.grad))
c.mistake("u.grad", row_grad[1], "the stack's rows swapped: u got the second row's gradient",
          "wrong_local_derivative", edge=["u", "stack"])
c.mistake("u.grad", s[0] * m, "d(s²)/ds taken as s: the 2 dropped", "wrong_local_derivative", edge=["mv", "pow"])

c.correct("v.grad", v.grad, answer(v.grad), bare(v.grad), as_tensor(v.grad))
c.mistake("v.grad", row_grad[1], "d(2.5·v)/dv taken as 1: the 2.5 dropped", "wrong_local_derivative",
          edge=["v", "mul"])
c.mistake("v.grad", 2.5 * s[1] * m, "d(s²)/ds taken as s: the 2 dropped", "wrong_local_derivative",
          edge=["mv", "pow"])
c.mistake("v.grad", row_grad, "gave the whole 2×2 gradient of rows", "shape")
c.write()
