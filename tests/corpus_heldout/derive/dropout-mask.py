"""heldout-dropout-mask: y = x·m/(1 - p), L = Σ (y - t)²."""

import torch
from heldout_cases import Cases, answer, as_tensor, bare, paths_from

xd = torch.tensor([0.5, -1.5, 2.0, 1.0])
m = torch.tensor([1.0, 0.0, 1.0, 1.0])
p = 0.25
t = torch.tensor([0.0, 1.0, 1.5, -0.5])
x = xd.clone().requires_grad_(True)
c = Cases("heldout-dropout-mask")
y = x * m / (1 - p)
L = ((y - t) ** 2).sum()
c.graph(L)
only = paths_from(L, {"x": x}, "L", "x")
L.backward()

yd = xd * m / (1 - p)
up = 2 * (yd - t)
assert torch.allclose(x.grad, up * m / (1 - p))
c.forward(xd * m, yd, yd - t)

c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", up * m, "the 1/(1 - p) scale forgotten in the backward pass", "wrong_local_derivative",
          edge=["mul", "div"])
c.mistake("x.grad", up * m * (1 - p), "the scale applied as ×(1 - p) instead of ÷(1 - p)", "wrong_local_derivative",
          edge=["mul", "div"])
c.mistake("x.grad", up / (1 - p), "the mask forgotten in the backward pass: the dropped unit gets a gradient",
          "wrong_local_derivative", edge=["x", "mul"])
c.mistake("x.grad", up * (1 - m) / (1 - p), "the mask read backwards: only the dropped unit gets a gradient",
          "wrong_local_derivative", edge=["x", "mul"])
c.mistake("x.grad", up * m / (1 - p) / 2, "d(e²)/de taken as e: the 2 dropped", "wrong_local_derivative",
          edge=["sub", "pow"])
c.mistake("x.grad", -up * m / (1 - p), "sign flipped: differentiated as 2(t - y)", "sign_error", paths=only)
c.write()
