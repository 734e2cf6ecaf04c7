"""heldout-regularised-loss: L = mean((Xw - y)²) + λ Σw² + μ Σ|w|."""

import torch
from heldout_cases import Cases, answer, as_tensor, bare, paths_from

wd = torch.tensor([0.5, -1.0, 0.25])
X = torch.tensor([[1.0, 0.5, -1.0], [0.0, 1.5, 2.0], [-0.5, 1.0, 0.5], [2.0, -1.0, 1.0]])
y = torch.tensor([1.0, -0.5, 0.25, 2.0])
lam, mu = 0.1, 0.05
w = wd.clone().requires_grad_(True)
c = Cases("heldout-regularised-loss")
sq = w**2
ab = w.abs()
L = ((X @ w - y) ** 2).mean() + lam * sq.sum() + mu * ab.sum()
c.graph(L)
leaves = {"w": w}
l2 = paths_from(L, leaves, "L", "w", through=[sq])
l1 = paths_from(L, leaves, "L", "w", through=[ab])
data = paths_from(L, leaves, "L", "w", avoiding=[sq, ab])
assert len(l2) == len(l1) == len(data) == 1
L.backward()

r = X @ wd - y
n = len(y)
by_data, by_l2, by_l1 = 2 / n * X.T @ r, 2 * lam * wd, mu * torch.sign(wd)
assert torch.allclose(w.grad, by_data + by_l2 + by_l1, atol=1e-6)
c.forward(r, X @ wd)

c.correct("w.grad", w.grad, answer(w.grad), bare(w.grad), as_tensor(w.grad))
c.mistake("w.grad", by_data + by_l1, "the L2 penalty's term forgotten", "missing_path", paths=l2)
c.mistake("w.grad", by_data + by_l2, "the L1 penalty's term forgotten", "missing_path", paths=l1)
c.mistake("w.grad", by_data + lam * wd + by_l1, "d(w²)/dw taken as w: the L2 term's 2 dropped",
          "wrong_local_derivative", edge=["w", "pow"])
c.mistake("w.grad", by_data + by_l2 + mu * torch.ones(3), "|w|′ taken as +1 for every weight (the negative one too)",
          "wrong_local_derivative", edge=["w", "abs"], accept=["dead_branch"])
c.mistake("w.grad", 2 * X.T @ r + by_l2 + by_l1, "the mean's 1/N forgotten", "wrong_local_derivative",
          edge=["pow", "mean"])
c.mistake("w.grad", by_data + 2 * wd + by_l1, "λ forgotten: d(λ s)/ds taken as 1", "wrong_local_derivative",
          edge=["sum", "mul"])
c.mistake("w.grad", by_data + by_l2 - by_l1, "the L1 term's sign flipped", "sign_error", paths=l1)
c.write()
