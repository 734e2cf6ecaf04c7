"""corpus-abs: L = ((|x| + b)**2).sum()."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([-1.5, 0.75, -2.25, 1.25])
b0 = 0.4
x = xd.clone().requires_grad_(True)
b = torch.tensor(b0, requires_grad=True)
L = ((torch.abs(x) + b) ** 2).sum()
L.backward()
s = xd.abs() + b0
assert torch.allclose(x.grad, 2 * s * torch.sign(xd)) and torch.allclose(b.grad, (2 * s).sum())

c = Cases("corpus-abs")
c.graph(L)
c.forward(xd.abs(), s, s**2)
c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", 2 * s, "|x|′ taken as +1 everywhere (abs′s catalogued mistake; also the kink ignored "
          "in the backward pass)",
          "wrong_local_derivative", edge=["x", "abs"], accept=["dead_branch"])
c.mistake("x.grad", 2 * (xd + b0), "abs ignored in the forward and the backward pass: |x| read as x",
          "dead_branch", edge=["x", "abs"])
c.mistake("x.grad", s * torch.sign(xd), "d(v²)/dv taken as v: the 2 dropped", "wrong_local_derivative",
          edge=["add", "pow"])

c.correct("b.grad", b.grad, answer(b.grad), as_tensor(b.grad))
c.mistake("b.grad", (2 * (xd + b0)).sum(), "abs ignored in the forward pass: |x| read as x", "dead_branch",
          edge=["x", "abs"])
c.mistake("b.grad", s.sum(), "d(v²)/dv taken as v: the 2 dropped", "wrong_local_derivative", edge=["add", "pow"])
c.mistake("b.grad", 2 * s, "gave one entry per element instead of their sum: b is one number", "shape")
c.write()
