"""heldout-non-leaf: w = tensor(…, requires_grad=True) * 0.1 is not a leaf; w.grad stays None."""

import warnings

import torch
from heldout_cases import Cases, answer, as_tensor, bare, paths_from

raw = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
w = raw * 0.1
b = torch.zeros(2, requires_grad=True)
X = torch.tensor([[1.0, 0.5, -1.0], [2.0, -1.0, 0.5]])
y = torch.tensor([0.5, -0.25])
c = Cases("heldout-non-leaf")
L = ((X @ w + b - y) ** 2).sum()
c.graph(L)
b_path = paths_from(L, {"b": b}, "L", "b")
L.backward()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # torch warns when .grad of a non-leaf is read: the point of the question
    assert w.grad is None

wd = raw.detach() * 0.1
r = X @ wd - y
g = 2 * r
assert torch.allclose(b.grad, g) and torch.allclose(raw.grad, 0.1 * X.T @ g)
c.forward(r, X @ wd, wd)

c.correct("w.grad", None, "None")
c.mistake("w.grad", X.T @ g, "gave the gradient w would have as a leaf", "untracked_leaf")
c.mistake("w.grad", 0.1 * X.T @ g, "gave the gradient of the unscaled leaf that w was computed from", "untracked_leaf")
c.mistake("w.grad", torch.zeros(3), "believed a tensor without a stored gradient holds zeros", "untracked_leaf")

c.correct("b.grad", b.grad, answer(b.grad), bare(b.grad), as_tensor(b.grad))
c.mistake("b.grad", r, "gave the residual: d(e²)/de taken as e (the 2 dropped)", "forward_value",
          accept=["wrong_local_derivative"], edge=["sub", "pow"])
c.mistake("b.grad", g.sum(), "summed the gradient into one number", "shape")
c.mistake("b.grad", -g, "sign flipped: differentiated as 2(y - ŷ)", "sign_error", paths=b_path)
c.mistake("b.grad", None, "believed a bias initialised with zeros gets no gradient", "untracked_leaf", text="None")
c.write()
