"""heldout-retain-graph: h = exp(x); L1 = Σh, backward(retain_graph=True); L2 = Σ h·h, backward."""

import torch
from heldout_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([0.5, -1.0, 1.5])
x = xd.clone().requires_grad_(True)
c = Cases("heldout-retain-graph")
h = torch.exp(x)
L1 = h.sum()
c.graph(L1)
L1.backward(retain_graph=True)
L2 = (h * h).sum()
c.graph(L2)
L2.backward()

e = torch.exp(xd)
first, second = e, 2 * e * e  # each call's gradient
assert torch.allclose(x.grad, first + second)
c.forward(e, e * e)

c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
# "only the first call counts" would give eˣ, which is h's forward value: not a case
c.mistake("x.grad", second, "the second call replaced the first: .grad overwritten", "accumulation")
c.mistake("x.grad", 2 * first + second, "believed the retained graph replays L1's backward with L2's",
          "accumulation")
c.mistake("x.grad", (first + second) / 2, "the two calls averaged", "accumulation")
c.mistake("x.grad", first + e * e, "d(h·h)/dh taken as h: the two operands counted once",
          "wrong_local_derivative", edge=["exp", "mul"])
c.mistake("x.grad", 1 + 2 * e, "d eˣ/dx taken as 1 in both calls (the chain rule stopped at h)",
          "wrong_local_derivative", edge=["x", "exp"])
c.write()
