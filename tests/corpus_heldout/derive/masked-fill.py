"""heldout-masked-fill: y = x.masked_fill(|x| > 2, 0), L = Σ (y - t)²."""

import torch
from heldout_cases import Cases, answer, as_tensor, bare, paths_from

xd = torch.tensor([0.5, -2.5, 1.5, 3.0, -0.75])
t = torch.tensor([1.0, 0.5, -0.5, 1.0, 0.25])
x = xd.clone().requires_grad_(True)
c = Cases("heldout-masked-fill")
mask = x.abs() > 2
y = x.masked_fill(mask, 0.0)
L = ((y - t) ** 2).sum()
c.graph(L)
only = paths_from(L, {"x": x}, "L", "x")
assert len(only) == 1
L.backward()

keep = (~mask).float()
yd = xd * keep
up = 2 * (yd - t)
assert torch.allclose(x.grad, up * keep)
c.forward(yd - t, xd.abs())

c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", up, "the filled entries still passed the gradient back (masked_fill′ taken as 1)",
          "wrong_local_derivative", edge=["x", "masked_fill"], accept=["dead_branch"])
c.mistake("x.grad", 2 * (xd - t), "the mask ignored in the forward and the backward pass: y = x", "dead_branch",
          edge=["x", "masked_fill"])
c.mistake("x.grad", up * (1 - keep), "the mask read backwards: only the filled entries get a gradient",
          "wrong_local_derivative", edge=["x", "masked_fill"])
c.mistake("x.grad", up * keep / 2, "d(e²)/de taken as e: the 2 dropped", "wrong_local_derivative",
          edge=["sub", "pow"])
c.mistake("x.grad", -up * keep, "sign flipped: differentiated as 2(t - y)", "sign_error", paths=only)
c.write()
