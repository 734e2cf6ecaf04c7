"""heldout-huber: L = huber(w x, t; δ = 1), mean over 4 points; two residuals inside, two outside."""

import torch
import torch.nn.functional as F
from heldout_cases import Cases, answer, as_tensor

w0 = 1.5
x = torch.tensor([0.5, 2.0, -1.0, 3.0])
t = torch.tensor([1.0, 2.5, 0.0, 2.0])
w = torch.tensor(w0, requires_grad=True)
c = Cases("heldout-huber")
L = F.huber_loss(w * x, t, delta=1.0)
c.graph(L)
L.backward()

r = w0 * x - t
assert r.tolist() == [-0.25, 0.5, -1.5, 2.5]
n = len(x)
slope = torch.clamp(r, -1.0, 1.0)  # huber′: r inside, δ·sign(r) outside
assert abs(float(w.grad) - float((slope * x).sum() / n)) < 1e-6
c.forward(r, w0 * x)

c.correct("w.grad", w.grad, answer(w.grad), as_tensor(w.grad), "1.21875", "39/32")
c.mistake("w.grad", (slope * x).sum(), "the mean's 1/N forgotten (a sum reduction)", "wrong_local_derivative",
          edge=["mul", "huber_loss"])
c.mistake("w.grad", (r * x).sum() / n, "quadratic everywhere: the linear part past δ ignored (huber′ taken as r)",
          "wrong_local_derivative", edge=["mul", "huber_loss"], accept=["dead_branch"])
c.mistake("w.grad", (torch.sign(r) * x).sum() / n, "linear everywhere: huber′ taken as δ·sign(r) for every point",
          "wrong_local_derivative", edge=["mul", "huber_loss"])
c.mistake("w.grad", (torch.where(r.abs() <= 1, r, torch.ones(4)) * x).sum() / n,
          "the linear part's slope taken as +δ whatever the sign of r", "wrong_local_derivative",
          edge=["mul", "huber_loss"])
c.mistake("w.grad", slope.sum() / n, "d(w x)/dw taken as 1: the x dropped", "wrong_local_derivative",
          edge=["w", "mul"])
c.mistake("w.grad", slope * x / n, "gave one gradient per point instead of their sum", "shape")
c.mistake("w.grad", (2 * r * x).sum() / n, "used the MSE's 2r for every point", "wrong_local_derivative",
          edge=["mul", "huber_loss"])
c.write()
