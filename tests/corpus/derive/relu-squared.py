"""corpus-relu-squared: L = (relu(w*x + b)**2).sum(), two units alive, two dead."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

x = torch.tensor([1.5, -0.5, 2.5, -1.25])
wd = torch.tensor([0.5, 1.5, -0.75, 0.8])
bd = torch.tensor([0.5, 1.25, 0.5, -0.3])
w, b = wd.clone().requires_grad_(True), bd.clone().requires_grad_(True)
h = w * x + b
L = (torch.relu(h) ** 2).sum()
L.backward()
hd = h.detach()
r = torch.relu(hd)
assert (hd > 0).tolist() == [True, True, False, False]
assert torch.allclose(b.grad, 2 * r) and torch.allclose(w.grad, 2 * r * x)

c = Cases("corpus-relu-squared")
c.graph(L)
c.forward(wd * x, hd, r, r**2)
c.correct("b.grad", b.grad, answer(b.grad), bare(b.grad), as_tensor(b.grad), "[2.5, 1.0, 0.0, 0.0]", "[5/2, 2/2, 0, 0]")
c.mistake("b.grad", 2 * hd, "ReLU ignored in the forward and the backward pass: relu(h)² read as h²",
          "dead_branch", edge=["add", "relu"])
c.mistake("b.grad", (2 * r).sum(), "summed the gradient into one number", "shape")

c.correct("w.grad", w.grad, answer(w.grad), bare(w.grad), as_tensor(w.grad))
c.mistake("w.grad", 2 * hd * x, "ReLU ignored in the forward and the backward pass", "dead_branch",
          edge=["add", "relu"])
c.mistake("w.grad", r * x, "d(r²)/dr taken as r: the 2 dropped", "wrong_local_derivative", edge=["relu", "pow"])
c.mistake("w.grad", 2 * r, "d(w·x)/dw taken as 1: the x factor dropped", "wrong_local_derivative", edge=["w", "mul"])
c.mistake("w.grad", 2 * r * wd, "d(w·x)/dw taken as w (the wrong operand)", "wrong_local_derivative",
          edge=["w", "mul"])
c.write()
