"""heldout-divide-by-sum: p = x / Σx, L = Σ p log p."""

import torch
from heldout_cases import Cases, answer, as_tensor, bare, paths_from

xd = torch.tensor([0.5, 1.5, 2.0, 1.0])
x = xd.clone().requires_grad_(True)
c = Cases("heldout-divide-by-sum")
total = x.sum()
p = x / total
L = (p * torch.log(p)).sum()
c.graph(L)
leaves = {"x": x}
via_sum = paths_from(L, leaves, "L", "x", through=[total])
numerator = paths_from(L, leaves, "L", "x", avoiding=[total])
assert len(via_sum) == len(numerator) == 2
L.backward()

S = float(xd.sum())
pd = xd / S
g = torch.log(pd) + 1  # dL/dp
by_numerator = g / S
by_sum = -(g * xd).sum() / S**2 * torch.ones(4)  # d(x_j/S)/dS = -x_j/S², then dS/dx_i = 1
assert torch.allclose(x.grad, by_numerator + by_sum, atol=1e-6)
c.forward(S, pd, torch.log(pd), pd * torch.log(pd))

c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", by_numerator, "the sum treated as a constant: dp/dx taken as 1/S", "missing_path", paths=via_sum)
c.mistake("x.grad", by_numerator - by_sum, "the quotient rule's minus sign lost on the sum", "sign_error",
          paths=via_sum, accept=["wrong_local_derivative"], edge=["sum", "div"])
wrong_g = torch.log(pd) + pd * torch.log(pd)  # dL/dp = log p + p·(d log p/dp) with d log p/dp read as log p
c.mistake("x.grad", wrong_g / S - (wrong_g * xd).sum() / S**2, "d log p/dp taken as log p", "wrong_local_derivative",
          edge=["div", "log"])
c.mistake("x.grad", g + by_sum, "d(x/S)/dx taken as 1: the 1/S dropped on the numerator", "wrong_local_derivative",
          edge=["x", "div"])
c.mistake("x.grad", by_numerator - (g * xd).sum() / S * torch.ones(4),
          "the quotient rule's S² taken as S: d(x/S)/dS as -x/S", "wrong_local_derivative", edge=["sum", "div"])
c.write()
