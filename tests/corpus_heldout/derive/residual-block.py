"""heldout-residual-block: y = x + W2 relu(W1 x + b1), L = Σ y²; one hidden unit is dead."""

import torch
from heldout_cases import Cases, answer, as_tensor, bare, paths_from, rounded

xd = torch.tensor([1.5, -0.5, 2.0])
W1 = torch.tensor([[0.5, 1.0, 0.5], [-1.0, 0.5, -0.25], [0.25, -0.5, 1.0]])
b1 = torch.tensor([0.1, 0.2, -0.3])
W2d = torch.tensor([[1.0, -0.5, 0.25], [0.5, 1.0, -1.0], [-0.25, 0.5, 0.5]])
x, W2 = xd.clone().requires_grad_(True), W2d.clone().requires_grad_(True)
c = Cases("heldout-residual-block")
pre = W1 @ x + b1
h = torch.relu(pre)
branch = W2 @ h
y = x + branch
L = (y**2).sum()
c.graph(L)
leaves = {"x": x, "W2": W2}
skip = paths_from(L, leaves, "L", "x", avoiding=[h])
through = paths_from(L, leaves, "L", "x", through=[h])
assert len(skip) == len(through) == 1
L.backward()

pd, hd, yd = pre.detach(), h.detach(), y.detach()
on = (pd > 0).float()
assert on.tolist() == [1.0, 0.0, 1.0], on  # one dead unit
gy = 2 * yd
by_skip, by_branch = gy, W1.T @ (on * (W2d.T @ gy))
assert torch.allclose(x.grad, by_skip + by_branch, atol=1e-6) and torch.allclose(W2.grad, torch.outer(gy, hd))
c.forward(pd, hd, W2d @ hd)

# the student who drops the ReLU altogether computes another forward pass as well
y_lin = xd + W2d @ pd
x_lin = 2 * y_lin + W1.T @ (W2d.T @ (2 * y_lin))

c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", by_branch, "the skip connection's path forgotten", "missing_path", paths=skip)
c.mistake("x.grad", by_skip, "the block's branch forgotten: only the identity", "missing_path", paths=through)
c.mistake("x.grad", by_skip + W1.T @ (W2d.T @ gy), "the dead unit given slope 1 in the backward pass",
          "dead_branch", edge=["add", "relu"], accept=["wrong_local_derivative"])
c.mistake("x.grad", x_lin, "the ReLU ignored in the forward and the backward pass", "dead_branch",
          edge=["add", "relu"])
c.mistake("x.grad", by_skip + W1 @ (on * (W2d.T @ gy)), "W1 instead of W1ᵀ going back to x",
          "wrong_local_derivative", edge=["x", "mv"])
c.mistake("x.grad", by_skip + W1.T @ (on * (W2d @ gy)), "W2 instead of W2ᵀ going back to h",
          "wrong_local_derivative", edge=["relu", "mv"])
c.mistake("x.grad", (by_skip + by_branch) / 2, "d(y²)/dy taken as y: the 2 dropped", "wrong_local_derivative",
          edge=["add", "pow"])

c.correct("W2.grad", W2.grad, answer(W2.grad), as_tensor(W2.grad), rounded(W2.grad))
c.mistake("W2.grad", torch.outer(hd, gy), "h gᵀ instead of g hᵀ: the outer product transposed",
          "wrong_local_derivative", edge=["W2", "mv"])
c.mistake("W2.grad", torch.outer(2 * (xd + W2d @ pd), pd), "the ReLU ignored in the forward and the backward pass",
          "dead_branch", edge=["add", "relu"])
c.mistake("W2.grad", torch.outer(yd, hd), "d(y²)/dy taken as y: the 2 dropped", "wrong_local_derivative",
          edge=["add", "pow"])
c.write()
