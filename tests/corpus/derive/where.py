"""corpus-where: y = where(x > 0, x³, 0), L = ((y - 0.5)**2).sum()."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([-1.5, 0.5, 2.5, -0.75])
x = xd.clone().requires_grad_(True)
y = torch.where(x > 0, x**3, torch.zeros_like(x))
L = ((y - 0.5) ** 2).sum()
L.backward()
yd = y.detach()
on = (xd > 0).float()
assert torch.allclose(x.grad, 2 * (yd - 0.5) * 3 * xd**2 * on)

c = Cases("corpus-where")
c.forward(xd**3, yd, yd - 0.5, (yd - 0.5) ** 2)
c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", 2 * (yd - 0.5) * 3 * xd**2, "where′ taken as 1 for every element in the backward pass "
          "(the x ≤ 0 elements get x³'s slope too); the same number as where′'s factor taken as 1", "dead_branch",
          edge=["pow", "where"], accept=["wrong_local_derivative"])
c.mistake("x.grad", 2 * (xd**3 - 0.5) * 3 * xd**2, "where ignored: y = x³ for every element, forward and backward",
          "dead_branch", edge=["pow", "where"])
c.mistake("x.grad", 2 * (yd - 0.5) * 3 * xd * on, "d(x³)/dx taken as 3x", "wrong_local_derivative", edge=["x", "pow"])
c.mistake("x.grad", (yd - 0.5) * 3 * xd**2 * on, "d(v²)/dv taken as v: the outer 2 dropped", "wrong_local_derivative",
          edge=["sub", "pow"])
c.write()
