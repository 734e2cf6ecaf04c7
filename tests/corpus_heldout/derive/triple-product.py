"""heldout-triple-product: L = x · exp(-x) · sin(x)."""

import math

import torch
from heldout_cases import Cases, answer, as_tensor, at, paths_from, rounded

x0 = 0.7
x = torch.tensor(x0, requires_grad=True)
c = Cases("heldout-triple-product")
e = torch.exp(-x)
s = torch.sin(x)
L = x * e * s
c.graph(L)
leaves = {"x": x}
via_x = paths_from(L, leaves, "L", "x", avoiding=[e, s])
via_exp = paths_from(L, leaves, "L", "x", through=[e])
via_sin = paths_from(L, leaves, "L", "x", through=[s])
assert len(via_x) == len(via_exp) == len(via_sin) == 1
L.backward()

E, S, C = math.exp(-x0), math.sin(x0), math.cos(x0)
t_x, t_exp, t_sin = E * S, -x0 * E * S, x0 * E * C  # one product-rule term per factor
assert math.isclose(float(x.grad), t_x + t_exp + t_sin, rel_tol=1e-6)
c.forward(E, S, x0 * E, x0 * E * S, -x0)

c.correct("x.grad", x.grad, answer(x.grad), as_tensor(x.grad), rounded(x.grad))
c.mistake("x.grad", t_x - t_exp + t_sin, "d e⁻ˣ/dx taken as e⁻ˣ: the inner -1 forgotten", "sign_error",
          paths=via_exp, accept=["wrong_local_derivative"], edge=["x", "neg"])
c.mistake("x.grad", t_x + t_exp - t_sin, "sin′ taken as -cos", "wrong_local_derivative", edge=["x", "sin"])
c.mistake("x.grad", t_exp + t_sin, "the factor x's own term forgotten", "missing_path", paths=via_x)
c.mistake("x.grad", t_x + t_exp, "sin x treated as a constant", "missing_path", paths=via_sin)
c.mistake("x.grad", x0 * E * S, "gave L itself, the forward value", "forward_value")

c.correct_formula("dL_dx", x.grad, {"x": x0}, "exp(-x)*sin(x) - x*exp(-x)*sin(x) + x*exp(-x)*cos(x)",
                  "exp(-x)*((1 - x)*sin(x) + x*cos(x))")
for formula, value, mistake, kind, where in [
    ("exp(-x)*sin(x) + x*exp(-x)*sin(x) + x*exp(-x)*cos(x)", t_x - t_exp + t_sin, "the inner -1 of e⁻ˣ forgotten",
     "sign_error", {"paths": via_exp, "accept": ["wrong_local_derivative"], "edge": ["x", "neg"]}),
    ("exp(-x)*sin(x) - x*exp(-x)*sin(x) - x*exp(-x)*cos(x)", t_x + t_exp - t_sin, "sin′ taken as -cos",
     "wrong_local_derivative", {"edge": ["x", "sin"]}),
    ("x*exp(-x)*cos(x) - x*exp(-x)*sin(x)", t_exp + t_sin, "the factor x's own term forgotten", "missing_path",
     {"paths": via_x}),
]:
    assert abs(at(formula, x=x0) - value) < 1e-9, formula
    c.mistake("dL_dx", value, mistake, kind, text=formula, **where)
c.write()
