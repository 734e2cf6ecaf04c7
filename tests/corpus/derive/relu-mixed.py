"""corpus-relu-mixed: h = relu(W x + b) with units 1, 2 alive and unit 3 dead; L = (w2·h)²."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

x = torch.tensor([1.5, -0.5])
Wd = torch.tensor([[0.5, -1.25], [1.5, 0.5], [-0.75, 2.5]])
bd = torch.tensor([0.1, -0.3, 0.2])
w2d = torch.tensor([0.8, -0.6, 1.25])
W, b, w2 = (t.clone().requires_grad_(True) for t in (Wd, bd, w2d))
h = torch.relu(W @ x + b)
out = w2 @ h
L = out**2
L.backward()
pre = Wd @ x + bd
alive = (pre > 0).float()
assert alive.tolist() == [1.0, 1.0, 0.0]
o = float(out.detach())
delta = 2 * o * w2d * alive
assert torch.allclose(b.grad, delta) and torch.allclose(W.grad, torch.outer(delta, x))

c = Cases("corpus-relu-mixed")
c.graph(L)
c.forward(pre, h.detach(), o, o**2)
c.correct("b.grad", b.grad, answer(b.grad), bare(b.grad), as_tensor(b.grad))
c.mistake("b.grad", 2 * o * w2d, "ReLU slope 1 on every unit, also the dead third one (relu′ taken as 1)",
          "dead_branch", edge=["add", "relu"], accept=["wrong_local_derivative"])
c.mistake("b.grad", o * w2d * alive, "d(out²)/d(out) taken as out: the 2 dropped", "wrong_local_derivative",
          edge=["dot", "pow"])
c.mistake("b.grad", 2 * o * alive, "d(w2·h)/dh taken as 1: the w2 factor dropped", "wrong_local_derivative",
          edge=["relu", "dot"])

c.correct("W.grad", W.grad, answer(W.grad), as_tensor(W.grad))
c.mistake("W.grad", torch.outer(2 * o * w2d, x), "ReLU slope 1 on every unit (relu′ taken as 1)",
          "dead_branch", edge=["add", "relu"], accept=["wrong_local_derivative"])
c.mistake("W.grad", torch.outer(delta, torch.ones(2)), "d(W x)/dW taken as 1: the x factor dropped",
          "wrong_local_derivative", edge=["W", "mv"])
c.mistake("W.grad", torch.outer(x, delta), "outer product the wrong way round (2×3 instead of 3×2)", "shape")
c.write()
