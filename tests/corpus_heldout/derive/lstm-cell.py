"""heldout-lstm-cell: c = σ(w_f x + u_f h) c0 + σ(w_i x + u_i h) tanh(w_g x + u_g h), L = tanh c."""

import math

import torch
from heldout_cases import Cases, answer, as_tensor, paths_from, rounded

x0, wi0, wf0, wg0, h, c0, ui, uf, ug = 0.8, 0.5, -0.75, 1.25, -0.5, 0.6, 1.0, 0.5, -1.0
x, wi, wf, wg = (torch.tensor(v, requires_grad=True) for v in (x0, wi0, wf0, wg0))
c = Cases("heldout-lstm-cell")
i = torch.sigmoid(wi * x + ui * h)
f = torch.sigmoid(wf * x + uf * h)
g = torch.tanh(wg * x + ug * h)
cell = f * c0 + i * g
L = torch.tanh(cell)
c.graph(L)
leaves = {"x": x, "wi": wi, "wf": wf, "wg": wg}
via_f = paths_from(L, leaves, "L", "x", through=[f])
via_i = paths_from(L, leaves, "L", "x", through=[i])
via_g = paths_from(L, leaves, "L", "x", through=[g])
assert len(via_f) == len(via_i) == len(via_g) == 1 and via_f == via_i  # the two gates' paths read alike
L.backward()

IG, FG, CG = (float(v.detach()) for v in (i, f, g))
out = 1 - math.tanh(IG * CG + FG * c0) ** 2  # tanh′ of the cell
assert math.isclose(float(wg.grad), out * IG * (1 - CG**2) * x0, rel_tol=1e-5)
assert math.isclose(float(wf.grad), out * c0 * FG * (1 - FG) * x0, rel_tol=1e-5)
by_f, by_i, by_g = out * c0 * FG * (1 - FG) * wf0, out * CG * IG * (1 - IG) * wi0, out * IG * (1 - CG**2) * wg0
assert math.isclose(float(x.grad), by_f + by_i + by_g, rel_tol=1e-5)

c.correct("wg.grad", wg.grad, answer(wg.grad), as_tensor(wg.grad), rounded(wg.grad))
c.mistake("wg.grad", out * IG * (1 + CG**2) * x0, "the candidate's tanh′ taken as 1 + tanh²",
          "wrong_local_derivative", edge=["add", "tanh"])
c.mistake("wg.grad", out * (1 - CG**2) * x0, "d(i·g)/dg taken as 1: the input gate i dropped",
          "wrong_local_derivative", edge=["tanh", "mul"])
c.mistake("wg.grad", IG * (1 - CG**2) * x0, "the output tanh′ forgotten: chain rule stopped at c",
          "wrong_local_derivative", edge=["add", "tanh"])
c.mistake("wg.grad", out * IG * (1 - CG**2), "d(w_g x)/dw_g taken as 1: the x dropped", "wrong_local_derivative",
          edge=["wg", "mul"])

c.correct("wf.grad", wf.grad, answer(wf.grad), as_tensor(wf.grad), rounded(wf.grad))
c.mistake("wf.grad", out * c0 * FG * x0, "σ′ taken as σ: the (1 - σ) factor dropped", "wrong_local_derivative",
          edge=["add", "sigmoid"])
c.mistake("wf.grad", out * c0 * (1 - FG) * x0, "σ′ taken as 1 - σ: the σ factor dropped", "wrong_local_derivative",
          edge=["add", "sigmoid"])
c.mistake("wf.grad", out * FG * (1 - FG) * x0, "d(f·c0)/df taken as 1: the old cell c0 dropped",
          "wrong_local_derivative", edge=["sigmoid", "mul"])

c.correct("x.grad", x.grad, answer(x.grad), as_tensor(x.grad), rounded(x.grad))
c.mistake("x.grad", by_i + by_g, "the forget gate's path forgotten (f treated as a constant)", "missing_path",
          paths=via_f)
c.mistake("x.grad", by_g, "both gates treated as constants: only the candidate's path", "missing_path",
          paths=via_f + via_i)
c.mistake("x.grad", by_f + by_i, "the candidate's path forgotten", "missing_path", paths=via_g)
c.mistake("x.grad", (by_f + by_i + by_g) / out, "the output tanh′ forgotten: chain rule stopped at c",
          "wrong_local_derivative", edge=["add", "tanh"])
c.write()
