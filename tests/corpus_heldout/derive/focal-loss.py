"""heldout-focal-loss: p = σ(z), L = -(1 - p)² log p."""

import math

import torch
from heldout_cases import Cases, answer, as_tensor, at, paths_from, rounded

z0 = 0.4
z = torch.tensor(z0, requires_grad=True)
c = Cases("heldout-focal-loss")
p = torch.sigmoid(z)
q = 1 - p
L = -q**2 * torch.log(p)
c.graph(L)
leaves = {"z": z}
modulating = paths_from(L, leaves, "L", "z", through=[q])
log_term = paths_from(L, leaves, "L", "z", avoiding=[q])
assert len(modulating) == len(log_term) == 1
L.backward()

P = 1 / (1 + math.exp(-z0))
Q = 1 - P
dp = P * Q
by_mod = 2 * Q * math.log(P) * dp      # -(d q²/dq)(dq/dp) log p · dp/dz = 2q log p · p q
by_log = -(Q**2) / P * dp              # -q² · (1/p) · p q
assert math.isclose(float(z.grad), by_mod + by_log, rel_tol=1e-5)
c.forward(P, Q, Q**2, math.log(P), -(Q**2) * math.log(P))

c.correct("z.grad", z.grad, answer(z.grad), as_tensor(z.grad), rounded(z.grad))
c.mistake("z.grad", by_log, "the modulating factor (1 - p)² treated as a constant weight", "missing_path",
          paths=modulating)
c.mistake("z.grad", -by_mod + by_log, "d(1 - p)/dp taken as +1", "sign_error", paths=modulating,
          accept=["wrong_local_derivative"], edge=["sigmoid", "sub"])
c.mistake("z.grad", by_mod - Q**2 * math.log(P) * dp, "d log p/dp taken as log p", "wrong_local_derivative",
          edge=["sigmoid", "log"])
c.mistake("z.grad", by_mod / Q + by_log / Q, "σ′ taken as σ: the (1 - σ) factor dropped", "wrong_local_derivative",
          edge=["z", "sigmoid"])
c.mistake("z.grad", by_mod / 2 + by_log, "d(q²)/dq taken as q: the exponent's 2 dropped", "wrong_local_derivative",
          edge=["sub", "pow"])
c.mistake("z.grad", -(Q**2) * math.log(P), "gave L itself, the forward value", "forward_value")

c.correct_formula("dL_dz", z.grad, {"z": z0}, "2*sigmoid(z)*(1 - sigmoid(z))^2*log(sigmoid(z)) - (1 - sigmoid(z))^3",
          "(1 - sigmoid(z))^2*(2*sigmoid(z)*log(sigmoid(z)) - 1 + sigmoid(z))")
for formula, value, mistake, kind, where in [
    ("-(1 - sigmoid(z))^3", by_log, "the modulating factor treated as a constant", "missing_path",
     {"paths": modulating}),
    ("-2*sigmoid(z)*(1 - sigmoid(z))^2*log(sigmoid(z)) - (1 - sigmoid(z))^3", -by_mod + by_log,
     "d(1 - p)/dp taken as +1", "sign_error", {"paths": modulating, "accept": ["wrong_local_derivative"],
                                               "edge": ["sigmoid", "sub"]}),
    ("2*sigmoid(z)*(1 - sigmoid(z))*log(sigmoid(z)) - (1 - sigmoid(z))^2", by_mod / Q + by_log / Q,
     "σ′ taken as σ", "wrong_local_derivative", {"edge": ["z", "sigmoid"]}),
]:
    assert abs(at(formula, z=z0) - value) < 1e-9, formula
    c.mistake("dL_dz", value, mistake, kind, text=formula, **where)
c.write()
