"""corpus-transpose-reshape: L = (x.t() * C).sum() + (x.reshape(3, 2)**2).sum()."""

import torch
from corpus_cases import Cases, answer, as_tensor

xd = torch.tensor([[1.5, -0.5, 2.5], [0.75, -1.25, 0.5]])
C = torch.tensor([[0.5, 3.0], [-1.5, 0.25], [2.5, -0.75]])
x = xd.clone().requires_grad_(True)
L = (x.t() * C).sum() + (x.reshape(3, 2) ** 2).sum()
L.backward()
g_view = 2 * xd.reshape(3, 2)  # gradient arriving at the reshaped tensor
assert torch.allclose(x.grad, C.t() + g_view.reshape(2, 3))
t_path = ["x", "t", "mul", "sum", "add", "L"]
view_path = ["x", "view", "pow", "sum", "add", "L"]

c = Cases("corpus-transpose-reshape")
c.forward(xd.t(), xd.t() * C, xd.reshape(3, 2), xd.reshape(3, 2) ** 2, C)
c.correct("x.grad", x.grad, answer(x.grad), as_tensor(x.grad))
c.mistake("x.grad", C.reshape(2, 3) + 2 * xd, "the transpose not undone: C laid back row by row instead of Cᵀ",
          "wrong_local_derivative", edge=["x", "t"])
c.mistake("x.grad", C.t() + g_view.t(), "the reshape undone with a transpose", "wrong_local_derivative",
          edge=["x", "view"])
c.mistake("x.grad", 2 * xd, "the x.t() * C term forgotten", "missing_path", paths=[t_path])
c.mistake("x.grad", C.t(), "the reshape term forgotten", "missing_path", paths=[view_path])
c.mistake("x.grad", C.t() + xd, "d(v²)/dv taken as v", "wrong_local_derivative", edge=["view", "pow"])
c.mistake("x.grad", C + g_view, "gave the gradient in the 3×2 shape of the views", "shape")
c.write()
