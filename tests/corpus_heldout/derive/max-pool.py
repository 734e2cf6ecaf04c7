"""heldout-max-pool: pooled = max over windows of 2, L = Σ (pooled - t)²."""

import torch
from heldout_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([0.5, 2.0, -1.0, -0.25, 1.5, 1.0])
t = torch.tensor([1.0, 0.5, 0.0])
x = xd.clone().requires_grad_(True)
c = Cases("heldout-max-pool")
pooled = x.view(3, 2).max(dim=1).values
L = ((pooled - t) ** 2).sum()
c.graph(L)
L.backward()

windows = xd.view(3, 2)
winner = (windows == windows.max(dim=1, keepdim=True).values).float()
up = 2 * (windows.max(dim=1).values - t)  # one gradient per window
per_window = up[:, None].expand(3, 2)
assert torch.allclose(x.grad, (per_window * winner).flatten())
c.forward(windows.max(dim=1).values, windows.min(dim=1).values)

c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad), "[0, 2, 0, -1.5, 3, 0]")
c.mistake("x.grad", (per_window * (1 - winner)).flatten(), "each window's gradient sent to the smaller entry",
          "wrong_local_derivative", edge=["view", "max"], accept=["dead_branch"])
c.mistake("x.grad", (per_window / 2).flatten(), "the gradient shared evenly in each window (as in average pooling)",
          "wrong_local_derivative", edge=["view", "max"])
c.mistake("x.grad", per_window.flatten(), "both entries of a window given the gradient (max′ taken as 1)",
          "dead_branch", edge=["view", "max"], accept=["wrong_local_derivative"])
c.mistake("x.grad", up, "gave the pooled gradient: 3 numbers for 6 inputs", "shape")
c.mistake("x.grad", (per_window * winner / 2).flatten(), "d(e²)/de taken as e: the 2 dropped",
          "wrong_local_derivative", edge=["sub", "pow"])
c.write()
