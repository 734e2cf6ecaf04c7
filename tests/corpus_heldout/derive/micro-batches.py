"""heldout-micro-batches: two backward calls of mean((X w - y)²)/2 accumulate into w.grad."""

import torch
from heldout_cases import Cases, answer, as_tensor, bare

wd = torch.tensor([0.5, -1.0])
batches = [(torch.tensor([[1.0, 0.5], [-1.0, 2.0], [0.5, 0.0]]), torch.tensor([0.5, -1.0, 2.0])),
           (torch.tensor([[0.0, 1.5], [2.0, -0.5], [1.0, 1.0]]), torch.tensor([1.0, 0.25, -0.5]))]
w = wd.clone().requires_grad_(True)
c = Cases("heldout-micro-batches")
for X, y in batches:
    L = ((X @ w - y) ** 2).mean() / 2
    c.graph(L)
    L.backward()


def call(X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """One micro-batch's gradient of mean(r²)/2: (2/n) Xᵀ r / 2."""
    return 2 / len(y) * X.T @ (X @ wd - y) / 2


first, second = (call(X, y) for X, y in batches)
assert torch.allclose(w.grad, first + second)
X_all, y_all = torch.cat([b[0] for b in batches]), torch.cat([b[1] for b in batches])
assert torch.allclose(w.grad, 2 / 6 * X_all.T @ (X_all @ wd - y_all))  # the full batch's mean loss

c.correct("w.grad", w.grad, answer(w.grad), bare(w.grad), as_tensor(w.grad))
c.mistake("w.grad", second, "only the last micro-batch: believed each backward() replaces .grad", "accumulation")
c.mistake("w.grad", first, "only the first micro-batch counted", "accumulation")
c.mistake("w.grad", (first + second) / 2, "believed the accumulated gradients are averaged again", "accumulation")
c.mistake("w.grad", 2 * (first + second), "the division by the 2 micro-batches forgotten in the gradient",
          "wrong_local_derivative", edge=["mean", "div"], accept=["accumulation"])
c.mistake("w.grad", 3 * (first + second), "the mean's 1/N forgotten in each micro-batch",
          "wrong_local_derivative", edge=["pow", "mean"])
c.write()
