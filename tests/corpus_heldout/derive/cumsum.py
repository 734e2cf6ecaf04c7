"""heldout-cumsum: c = cumsum(x), L = Σ c²."""

import torch
from heldout_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([0.5, -1.0, 2.0, 1.5])
x = xd.clone().requires_grad_(True)
c = Cases("heldout-cumsum")
cs = torch.cumsum(x, dim=0)
L = (cs**2).sum()
c.graph(L)
L.backward()

up = 2 * torch.cumsum(xd, dim=0)  # dL/dc
reverse_cumsum = up.flip(0).cumsum(0).flip(0)  # x_i feeds c_i, c_{i+1}, …
assert torch.allclose(x.grad, reverse_cumsum)

c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", up.cumsum(0), "the gradient summed forwards (a cumsum) instead of from the end",
          "wrong_local_derivative", edge=["x", "cumsum"])
c.mistake("x.grad", up, "cumsum′ taken as 1 (as if cᵢ depended on xᵢ only)", "wrong_local_derivative",
          edge=["x", "cumsum"])
c.mistake("x.grad", up.sum() * torch.ones(4), "every xᵢ given the whole sum (as if every cₖ held every x)",
          "wrong_local_derivative", edge=["x", "cumsum"])
c.mistake("x.grad", reverse_cumsum / 2, "d(c²)/dc taken as c: the 2 dropped", "wrong_local_derivative",
          edge=["cumsum", "pow"])
c.mistake("x.grad", reverse_cumsum.sum(), "summed the gradient into one number", "shape")
c.write()
