"""corpus-accumulate-loop: three backward calls of (c_i * x**2).sum(), no zeroing."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([1.5, -0.5])
cs = [1.5, 0.5, 3.5]
x = xd.clone().requires_grad_(True)
for ci in cs:
    y = (ci * x**2).sum()
    y.backward()
calls = [2 * ci * xd for ci in cs]  # each call's gradient
assert torch.allclose(x.grad, sum(calls))

c = Cases("corpus-accumulate-loop")
c.forward(xd**2, *[ci * xd**2 for ci in cs])
c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad), "[33/2, -11/2]")
c.mistake("x.grad", calls[0], "only the first call counted", "accumulation")
c.mistake("x.grad", calls[-1], "the last call overwrites .grad", "accumulation")
c.mistake("x.grad", sum(calls) / 3, "the three calls averaged", "accumulation")
c.mistake("x.grad", sum(cs) * xd, "d(x²)/dx taken as x in every call", "wrong_local_derivative", edge=["x", "pow"])
c.mistake("x.grad", sum(cs) * 2 * torch.ones(2), "d(x²)/dx taken as 2 (the x dropped) in every call",
          "wrong_local_derivative", edge=["x", "pow"])
c.write()
