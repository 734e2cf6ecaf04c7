"""corpus-mse-mean: L = mse_loss(w*x + b, t), mean reduction over 4 points."""

from fractions import Fraction

import torch
import torch.nn.functional as F
from corpus_cases import Cases, answer, as_tensor

x = torch.tensor([0.5, 1.5, -1.25, 2.5])
t = torch.tensor([1.25, 2.5, -0.5, 3.5])
w = torch.tensor(0.8, requires_grad=True)
b = torch.tensor(0.3, requires_grad=True)
L = F.mse_loss(w * x + b, t)
L.backward()
r = (0.8 * x + 0.3 - t)
n = 4
assert torch.allclose(w.grad, (2 * r * x).mean()) and torch.allclose(b.grad, (2 * r).mean())
frac_w = Fraction(float(w.grad)).limit_denominator(1000)

c = Cases("corpus-mse-mean")
c.graph(L)
c.correct("w.grad", w.grad, answer(w.grad), f"{float(w.grad):.6f}", as_tensor(w.grad), f"[{answer(w.grad)}]",
          f"{frac_w.numerator}/{frac_w.denominator}")
c.mistake("w.grad", (2 * r * x).sum(), "sum of squared errors: the 1/N of the mean reduction forgotten",
          "wrong_local_derivative", edge=["add", "mse_loss"])
c.mistake("w.grad", (r * x).mean(), "d(r²)/dr taken as r: the 2 dropped", "wrong_local_derivative",
          edge=["add", "mse_loss"])
c.mistake("w.grad", (2 * r).mean(), "d(w·x)/dw taken as 1: the x factor dropped",
          "wrong_local_derivative", edge=["w", "mul"])
c.mistake("w.grad", -(2 * r * x).mean(), "residual written t - ŷ: sign flipped", "sign_error",
          paths=[["w", "mul", "add", "mse_loss", "L"]])
c.mistake("w.grad", L.detach(), "gave the loss value, not its gradient", "forward_value")

c.correct("b.grad", b.grad, answer(b.grad), as_tensor(b.grad), f"{float(b.grad):.5f}")
c.mistake("b.grad", (2 * r).sum(), "the 1/N of the mean reduction forgotten", "wrong_local_derivative",
          edge=["add", "mse_loss"])
c.mistake("b.grad", r.mean(), "d(r²)/dr taken as r: the 2 dropped", "wrong_local_derivative",
          edge=["add", "mse_loss"])
c.mistake("b.grad", 2 * r / n, "gave each point's share, not their sum", "shape")
c.mistake("w.grad", (2 * r).sum(), "two mistakes: summed instead of averaged and the x factor dropped",
          "two_mistakes", components=[{"kind": "wrong_local_derivative", "edge": ["add", "mse_loss"]},
                                      {"kind": "wrong_local_derivative", "edge": ["w", "mul"]}])
c.write()
