"""corpus-stop-gradient: m = x.mean().detach(), L = ((x - m)**3).sum()."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([1.5, -0.5, 2.5])
x = xd.clone().requires_grad_(True)
m = x.mean().detach()
L = ((x - m) ** 3).sum()
L.backward()
d = xd - xd.mean()
g = 3 * d**2  # gradient arriving at x - m
assert torch.allclose(x.grad, g)
through_mean = ["x", "mean", "detach", "sub", "pow", "sum", "L"]

c = Cases("corpus-stop-gradient")
c.forward(d, d**3, xd)
c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", g - g.mean(), "differentiated through the mean: detach() ignored", "extra_path",
          paths=[through_mean])
c.mistake("x.grad", 3 * d, "d(v³)/dv taken as 3v", "wrong_local_derivative", edge=["sub", "pow"])
c.mistake("x.grad", d**2, "d(v³)/dv taken as v² (the 3 dropped)", "wrong_local_derivative", edge=["sub", "pow"])
c.mistake("x.grad", 3 * xd**2, "the centring ignored: m treated as 0", "unknown")
c.write()
