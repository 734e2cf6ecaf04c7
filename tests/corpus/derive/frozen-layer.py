"""corpus-frozen-layer: W and x untracked, v tracked; L = (v * tanh(W x)).sum()**2."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

x = torch.tensor([1.5, -0.5])
W = torch.tensor([[0.5, 1.25], [-0.75, 0.4]])
vd = torch.tensor([0.8, -1.5])
v = vd.clone().requires_grad_(True)
h = torch.tanh(W @ x)
L = (v * h).sum() ** 2
L.backward()
s = float((vd * h).sum())
assert torch.allclose(v.grad, 2 * s * h)
tanh_slope = 1 - h**2

c = Cases("corpus-frozen-layer")
c.forward(W @ x, h, vd * h, s, s**2)
c.correct("v.grad", v.grad, answer(v.grad), bare(v.grad), as_tensor(v.grad))
c.mistake("v.grad", s * h, "d(s²)/ds taken as s: the 2 dropped", "wrong_local_derivative", edge=["sum", "pow"])
c.mistake("v.grad", None, "believed the frozen layer stops every gradient", "untracked_leaf", text="None")
c.mistake("v.grad", 2 * s * (W @ x), "tanh ignored: used W x in place of h", "unknown")

c.values["W.grad"] = None
c.right += [{"part": "W.grad", "answer": "None"}]
c.mistake("W.grad", torch.outer(2 * s * vd * tanh_slope, x), "gave the gradient W would have if it were trained",
          "untracked_leaf")
c.values["x.grad"] = None
c.right += [{"part": "x.grad", "answer": "None"}]
c.mistake("x.grad", W.T @ (2 * s * vd * tanh_slope), "gave the gradient x would have if it were tracked",
          "untracked_leaf")
c.write()
