"""corpus-mean-vs-sum: L = (x**3).mean(), x = [0.5, -1.5, 2.5, 3.5]."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

xs = [0.5, -1.5, 2.5, 3.5]
x = torch.tensor(xs, requires_grad=True)
L = (x**3).mean()
L.backward()
right = x.grad
n = len(xs)
xd = torch.tensor(xs)
assert torch.allclose(right, 3 * xd**2 / n)

c = Cases("corpus-mean-vs-sum")
c.correct("x.grad", right, answer(right), bare(right), as_tensor(right), "[3/16, 27/16, 75/16, 147/16]")
c.mistake("x.grad", 3 * xd**2, "mean differentiated like sum: the 1/N of mean forgotten",
          "wrong_local_derivative", edge=["pow", "mean"])
c.mistake("x.grad", xd**2 / n, "power rule without the exponent in front: d(x³)/dx taken as x²",
          "wrong_local_derivative", edge=["x", "pow"])
c.mistake("x.grad", 3 * xd / n, "exponent not lowered by the right amount: d(x³)/dx taken as 3x",
          "wrong_local_derivative", edge=["x", "pow"])
c.mistake("x.grad", torch.ones(n) / n, "chain rule forgotten: d(x³)/dx taken as 1, only the 1/N kept",
          "wrong_local_derivative", edge=["x", "pow"])
c.mistake("x.grad", -3 * xd**2 / n, "sign flipped on the only path",
          "sign_error", paths=[["x", "pow", "mean", "L"]])
c.mistake("x.grad", xd**3, "gave x³, the forward value of pow, instead of a gradient", "forward_value")
c.mistake("x.grad", (3 * xd**2 / n).sum(), "summed the gradient into one number", "shape")
c.mistake("x.grad", 3 * xd, "two mistakes: the 1/N of mean forgotten and d(x³)/dx taken as 3x", "two_mistakes",
          components=[{"kind": "wrong_local_derivative", "edge": ["pow", "mean"]},
                      {"kind": "wrong_local_derivative", "edge": ["x", "pow"]}])
c.mistake("x.grad", torch.tensor([7.0, 3.0, -2.0, 11.0]), "a guess: no derivation gives these numbers", "unknown")
c.write()
