"""heldout-gru-cell: h' = (1 - z) h + z n, z = σ(w_z x + u_z h), n = tanh(w_n x + u_n h), L = (h' - t)²."""

import math

import torch
from heldout_cases import Cases, answer, as_tensor, paths_from, rounded

h0, un0, x, wz, uz, wn, t = 0.4, 1.5, 1.2, 0.5, -1.0, 0.8, 0.2
h = torch.tensor(h0, requires_grad=True)
un = torch.tensor(un0, requires_grad=True)
c = Cases("heldout-gru-cell")
z = torch.sigmoid(wz * x + uz * h)
keep = 1 - z
n = torch.tanh(wn * x + un * h)
h_new = keep * h + z * n
L = (h_new - t) ** 2
c.graph(L)
leaves = {"h": h, "un": un}
via_keep_gate = paths_from(L, leaves, "L", "h", through=[z, keep])
via_gate_n = paths_from(L, leaves, "L", "h", through=[z], avoiding=[keep])
via_n = paths_from(L, leaves, "L", "h", through=[n])
direct = paths_from(L, leaves, "L", "h", avoiding=[z, n])
assert len(direct) == len(via_keep_gate) == len(via_gate_n) == len(via_n) == 1
L.backward()

Z, N = 1 / (1 + math.exp(-(wz * x + uz * h0))), math.tanh(wn * x + un0 * h0)
up = 2 * ((1 - Z) * h0 + Z * N - t)
dz = Z * (1 - Z) * uz
p_direct, p_keep, p_gate_n, p_n = up * (1 - Z), up * (-dz) * h0, up * dz * N, up * Z * (1 - N**2) * un0
assert math.isclose(float(h.grad), p_direct + p_keep + p_gate_n + p_n, rel_tol=1e-5)
assert math.isclose(float(un.grad), up * Z * (1 - N**2) * h0, rel_tol=1e-5)
c.forward(1 - Z, Z * N, (1 - Z) * h0)

c.correct("h.grad", h.grad, answer(h.grad), as_tensor(h.grad), rounded(h.grad))
c.mistake("h.grad", p_direct + p_n, "the update gate z treated as a constant", "missing_path",
          paths=via_keep_gate + via_gate_n)
c.mistake("h.grad", p_keep + p_gate_n + p_n, "the direct (1 - z)·h path forgotten", "missing_path", paths=direct)
c.mistake("h.grad", p_direct - p_keep + p_gate_n + p_n, "d(1 - z)/dz taken as +1", "sign_error",
          paths=via_keep_gate, accept=["wrong_local_derivative"], edge=["sigmoid", "sub"])
c.mistake("h.grad", p_direct + p_keep + p_gate_n + up * Z * (1 - N) * un0, "tanh′ taken as 1 - tanh (not squared)",
          "wrong_local_derivative", edge=["add", "tanh"])
c.mistake("h.grad", (p_direct + p_keep + p_gate_n + p_n) / 2, "d(e²)/de taken as e: the 2 dropped",
          "wrong_local_derivative", edge=["sub", "pow"])
c.mistake("h.grad", p_direct + p_keep + p_gate_n, "the candidate n treated as a constant", "missing_path",
          paths=via_n)

c.correct("un.grad", un.grad, answer(un.grad), as_tensor(un.grad), rounded(un.grad))
c.mistake("un.grad", up * Z * (1 - N**2), "d(u_n h)/du_n taken as 1: the h dropped", "wrong_local_derivative",
          edge=["un", "mul"])
c.mistake("un.grad", up * (1 - N**2) * h0, "d(z·n)/dn taken as 1: the gate z dropped", "wrong_local_derivative",
          edge=["tanh", "mul"])
c.mistake("un.grad", up * Z * h0, "the candidate's tanh′ forgotten", "wrong_local_derivative", edge=["add", "tanh"])
c.write()
