"""corpus-zero-grad-loop: x.grad zeroed before each backward call: only the last call remains."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([1.5, -0.5])
cs = [1.5, 0.5, 3.5]
x = xd.clone().requires_grad_(True)
for ci in cs:
    y = (ci * x**3).sum()
    if x.grad is not None:
        x.grad.zero_()
    y.backward()
calls = [3 * ci * xd**2 for ci in cs]
assert torch.allclose(x.grad, calls[-1])

c = Cases("corpus-zero-grad-loop")
c.forward(xd**3, *[ci * xd**3 for ci in cs])
c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", sum(calls), "zero_() overlooked: all three calls summed", "accumulation")
c.mistake("x.grad", calls[0], "only the first call counted", "accumulation")
c.mistake("x.grad", sum(calls) / 3, "the three calls averaged", "accumulation")
c.mistake("x.grad", torch.zeros(2), "read zero_() as clearing .grad after the backward call: zeros",
          "accumulation")
c.mistake("x.grad", 3 * cs[-1] * xd, "d(x³)/dx taken as 3x", "wrong_local_derivative", edge=["x", "pow"])
c.write()
