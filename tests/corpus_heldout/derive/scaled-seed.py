"""heldout-scaled-seed: y = tanh(W x), y.backward(2·[1, -0.5, 0.25])."""

import torch
from heldout_cases import Cases, answer, as_tensor, bare, rounded

Wd = torch.tensor([[0.5, -1.0, 0.25], [1.0, 0.5, -0.5], [-0.25, 0.75, 1.0]])
xd = torch.tensor([0.5, -1.0, 1.5])
direction = torch.tensor([1.0, -0.5, 0.25])
seed = 2 * direction
W, x = Wd.clone().requires_grad_(True), xd.clone().requires_grad_(True)
c = Cases("heldout-scaled-seed")
y = torch.tanh(W @ x)
c.graph(y)
y.backward(seed)

yd = torch.tanh(Wd @ xd)
slope = 1 - yd**2


def grads(v: torch.Tensor, tanh_slope: torch.Tensor = slope) -> tuple[torch.Tensor, torch.Tensor]:
    g = v * tanh_slope  # the gradient arriving at W x
    return Wd.T @ g, torch.outer(g, xd)


assert torch.allclose(x.grad, grads(seed)[0], atol=1e-6) and torch.allclose(W.grad, grads(seed)[1], atol=1e-6)
c.forward(Wd @ xd, yd, yd * seed)

c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", grads(torch.ones(3))[0], "the seed ignored: backward() as if with ones", "seed_vector")
c.mistake("x.grad", grads(direction)[0], "the scale 2 of the seed dropped: seeded with [1, -0.5, 0.25]",
          "seed_vector")
c.mistake("x.grad", grads(seed * seed)[0], "the seed applied twice", "seed_vector")
c.mistake("x.grad", Wd @ (seed * slope), "W instead of Wᵀ going back to x", "wrong_local_derivative",
          edge=["x", "mv"])
c.mistake("x.grad", grads(seed, 1 + yd**2)[0], "tanh′ taken as 1 + tanh²", "wrong_local_derivative",
          edge=["mv", "tanh"])
c.mistake("x.grad", grads(seed)[0].sum(), "gave vᵀJ summed into one number", "shape")

c.correct("W.grad", W.grad, answer(W.grad), as_tensor(W.grad), rounded(W.grad))
c.mistake("W.grad", grads(seed)[1].T, "x gᵀ instead of g xᵀ: the outer product transposed",
          "wrong_local_derivative", edge=["W", "mv"])
c.mistake("W.grad", grads(torch.ones(3))[1], "the seed ignored: backward() as if with ones", "seed_vector")
c.mistake("W.grad", grads(seed, torch.ones(3))[1], "tanh′ forgotten (taken as 1)", "wrong_local_derivative",
          edge=["mv", "tanh"])
c.write()
