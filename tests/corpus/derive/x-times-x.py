"""corpus-x-times-x: L = (c * (x * x)).sum()."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([1.5, -0.5, 2.5])
cd = torch.tensor([0.5, -1.25, 1.5])
x = xd.clone().requires_grad_(True)
L = (cd * (x * x)).sum()
L.backward()
assert torch.allclose(x.grad, 2 * cd * xd)

c = Cases("corpus-x-times-x")
c.forward(xd * xd, cd * xd * xd, cd, xd)
c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad), "[3/2, 5/4, 15/2]")
c.mistake("x.grad", cd * xd, "d(x·x)/dx taken as x: the two operands of x*x counted once",
          "wrong_local_derivative", edge=["x", "mul"])
c.mistake("x.grad", 2 * xd, "d(c·v)/dv taken as 1: the weights c dropped", "wrong_local_derivative",
          edge=["mul", "mul"])
c.mistake("x.grad", cd * xd * xd, "gave c·x², the forward value", "forward_value")
c.mistake("x.grad", (2 * cd * xd).sum(), "summed the gradient into one number", "shape")
c.write()
