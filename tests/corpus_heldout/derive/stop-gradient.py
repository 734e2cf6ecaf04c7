"""heldout-stop-gradient: L = Σ (W x - (V x).detach())²."""

import torch
from heldout_cases import Cases, answer, as_tensor, bare, paths_from, rounded

xd = torch.tensor([0.5, -1.0, 2.0])
Wd = torch.tensor([[1.0, 0.5, -0.5], [-1.0, 2.0, 0.25]])
V = torch.tensor([[0.5, 1.0, 0.0], [1.0, -0.5, 1.5]])
x, W = xd.clone().requires_grad_(True), Wd.clone().requires_grad_(True)
c = Cases("heldout-stop-gradient")
p = W @ x
z = V @ x
L = ((p - z.detach()) ** 2).sum()
c.graph(L)
leaves = {"x": x, "W": W}
predictor = paths_from(L, leaves, "L", "x")
w_path = paths_from(L, leaves, "L", "W")
assert len(predictor) == len(w_path) == 1
L.backward()
# the path a student who ignores detach() counts: x → mv → detach → sub → pow → sum → L
through_target = [["x", "mv", "detach", *predictor[0][2:]]]

g = 2 * (Wd @ xd - V @ xd)  # dL/dp; dL/dz would be -g
assert torch.allclose(x.grad, Wd.T @ g) and torch.allclose(W.grad, torch.outer(g, xd))
c.forward(Wd @ xd, V @ xd, Wd @ xd - V @ xd)

c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", Wd.T @ g - V.T @ g, "the detach() ignored: the target branch differentiated too", "extra_path",
          paths=through_target)
c.mistake("x.grad", None, "believed one detached branch stops every gradient to x", "untracked_leaf", text="None")
c.mistake("x.grad", Wd.T @ g / 2, "d(e²)/de taken as e: the 2 dropped", "wrong_local_derivative",
          edge=["sub", "pow"])
c.mistake("x.grad", -Wd.T @ g, "sign flipped: differentiated as 2(z - p)", "sign_error", paths=predictor)

c.correct("W.grad", W.grad, answer(W.grad), as_tensor(W.grad), rounded(W.grad))
c.mistake("W.grad", torch.outer(xd, g), "gave the 3×2 transpose of the gradient", "shape")
c.mistake("W.grad", torch.outer(g, xd) / 2, "d(e²)/de taken as e: the 2 dropped", "wrong_local_derivative",
          edge=["sub", "pow"])
c.mistake("W.grad", -torch.outer(g, xd), "sign flipped: differentiated as 2(z - p)", "sign_error", paths=w_path)
c.write()
