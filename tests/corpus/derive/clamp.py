"""corpus-clamp: L = (clamp(x, -1, 1)**2).sum()."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([-1.5, 0.5, 2.5, -0.25])
x = xd.clone().requires_grad_(True)
y = torch.clamp(x, -1.0, 1.0)
L = (y**2).sum()
L.backward()
yd = y.detach()
inside = ((xd > -1) & (xd < 1)).float()
assert torch.allclose(x.grad, 2 * yd * inside)

c = Cases("corpus-clamp")
c.forward(yd, yd**2)
c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad), "[0, 1, 0, -1/2]")
c.mistake("x.grad", 2 * yd, "clamp′ taken as 1 everywhere (the flat parts ignored in the backward pass); "
          "the same number as clamp′'s factor taken as 1", "dead_branch", edge=["x", "clamp"],
          accept=["wrong_local_derivative"])
c.mistake("x.grad", 2 * xd, "clamp ignored altogether: y = x in the forward and the backward pass",
          "dead_branch", edge=["x", "clamp"])
c.mistake("x.grad", yd * inside, "d(y²)/dy taken as y: the 2 dropped", "wrong_local_derivative",
          edge=["clamp", "pow"])
c.write()
