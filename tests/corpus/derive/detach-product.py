"""corpus-detach-product: h = w x, L = h * h.detach() + w."""

import math

import torch
from corpus_cases import Cases, answer, as_tensor

w0, x0 = 1.5, -0.75
w = torch.tensor(w0, requires_grad=True)
x = torch.tensor(x0, requires_grad=True)
h = w * x
L = h * h.detach() + w
L.backward()
H = w0 * x0
assert math.isclose(float(w.grad), H * x0 + 1, rel_tol=1e-6) and math.isclose(float(x.grad), H * w0, rel_tol=1e-6)
kept = {"w": ["w", "mul", "mul", "add", "L"], "x": ["x", "mul", "mul", "add", "L"]}
cut = {k: [k, "mul", "detach", "mul", "add", "L"] for k in "wx"}
plus_w = ["w", "add", "L"]

c = Cases("corpus-detach-product")
c.graph(L)
c.forward(H, H * H, H * H + w0)
c.correct("w.grad", w.grad, answer(w.grad), as_tensor(w.grad), "59/32")
c.mistake("w.grad", 2 * H * x0 + 1, "h.detach() treated as h: d(h²)/dh = 2h", "extra_path", paths=[cut["w"]])
c.mistake("w.grad", H * x0, "the + w term forgotten", "missing_path", paths=[plus_w])
c.mistake("w.grad", H + 1, "d(w·x)/dw taken as 1: the x factor dropped", "wrong_local_derivative", edge=["w", "mul"])
c.mistake("w.grad", 2 * H * x0, "detach ignored and the + w forgotten", "two_mistakes",
          components=[{"kind": "extra_path", "paths": [cut["w"]]}, {"kind": "missing_path", "paths": [plus_w]}])

c.correct("x.grad", x.grad, answer(x.grad), as_tensor(x.grad), "-27/16")
c.mistake("x.grad", 2 * H * w0, "h.detach() treated as h", "extra_path", paths=[cut["x"]])
c.mistake("x.grad", 0.0, "believed the detach stops all of x's gradient", "missing_path", paths=[kept["x"]])
c.write()
