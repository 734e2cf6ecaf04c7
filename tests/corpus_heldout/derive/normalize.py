"""heldout-normalize: y = x/‖x‖ (F.normalize), L = y·c."""

import torch
import torch.nn.functional as F
from heldout_cases import Cases, answer, as_tensor, bare, paths_from

xd = torch.tensor([3.0, -1.0, 2.0, 0.5])
cv = torch.tensor([1.0, 2.0, -0.5, 1.5])
x = xd.clone().requires_grad_(True)
c = Cases("heldout-normalize")
y = F.normalize(x, dim=0)
L = y @ cv
c.graph(L)
leaves = {"x": x}
every = paths_from(L, leaves, "L", "x")
direct = [p for p in every if "linalg_vector_norm" not in p]
through_norm = [p for p in every if "linalg_vector_norm" in p]
assert len(direct) == len(through_norm) == 1
L.backward()

n = float(xd.norm())
yd = xd / n
by_direct = cv / n
dL_dn = -float(xd @ cv) / n**2
by_norm = dL_dn * xd / n
assert torch.allclose(x.grad, by_direct + by_norm, atol=1e-6)
assert torch.allclose(x.grad, (cv - yd * (yd @ cv)) / n, atol=1e-6)
c.forward(n, yd, yd @ cv)

c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", by_direct, "the norm treated as a constant: dy/dx taken as I/‖x‖", "missing_path",
          paths=through_norm)
c.mistake("x.grad", by_direct - by_norm, "the sign of the norm's term lost: (c + y(y·c))/‖x‖", "sign_error",
          paths=through_norm, accept=["wrong_local_derivative"], edge=["expand", "div"])
# d‖x‖/dx taken as x gives the same number as the quotient rule's ‖x‖² taken as ‖x‖: not a case
c.mistake("x.grad", by_direct + dL_dn * 2 * xd, "d‖x‖/dx taken as 2x, the derivative of ‖x‖²",
          "wrong_local_derivative", edge=["x", "linalg_vector_norm"])
c.mistake("x.grad", cv + by_norm, "d(x/n)/dx taken as 1 on the numerator: the 1/‖x‖ dropped",
          "wrong_local_derivative", edge=["x", "div"])
c.mistake("x.grad", (by_direct + by_norm).sum(), "summed the gradient into one number", "shape")
c.write()
