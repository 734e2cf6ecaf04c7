"""heldout-cumprod: p = cumprod(x), L = Σ p²."""

import torch
from heldout_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([1.5, -0.5, 2.0])
x = xd.clone().requires_grad_(True)
c = Cases("heldout-cumprod")
p = torch.cumprod(x, dim=0)
L = (p**2).sum()
c.graph(L)
L.backward()

pd = torch.cumprod(xd, dim=0)
up = 2 * pd  # dL/dp
n = len(xd)
# dp_k/dx_i = p_k / x_i for k >= i (x has no zero)
right = torch.tensor([sum(up[k] * pd[k] / xd[i] for k in range(i, n)) for i in range(n)])
assert torch.allclose(x.grad, right)
own_only = up * pd / xd                      # dp_i/dx_i only: the later products forgotten
with_self = torch.tensor([sum(up[k] * pd[k] for k in range(i, n)) for i in range(n)])  # p_k, not p_k/x_i
prefix_before = torch.cat([torch.ones(1), pd[:-1]])  # dp_k/dx_i taken as p_{i-1} (the product before x_i)
first_factor = torch.tensor([sum(up[k] * prefix_before[i] for k in range(i, n)) for i in range(n)])

c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", own_only, "only pᵢ's dependence on xᵢ: the later products pₖ (k > i) forgotten",
          "wrong_local_derivative", edge=["x", "cumprod"])
c.mistake("x.grad", up, "cumprod′ taken as 1", "wrong_local_derivative", edge=["x", "cumprod"])
c.mistake("x.grad", with_self, "dpₖ/dxᵢ taken as pₖ (xᵢ not divided out)", "wrong_local_derivative",
          edge=["x", "cumprod"])
c.mistake("x.grad", first_factor, "dpₖ/dxᵢ taken as the product before xᵢ (the factors after it forgotten)",
          "wrong_local_derivative", edge=["x", "cumprod"])
c.mistake("x.grad", right / 2, "d(p²)/dp taken as p: the 2 dropped", "wrong_local_derivative",
          edge=["cumprod", "pow"])
c.write()
