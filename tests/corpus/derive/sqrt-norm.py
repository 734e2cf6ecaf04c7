"""corpus-sqrt-norm: r = sqrt(x² + y²) at x = 1.2, y = 0.5 (r = 1.3)."""

import math

import torch
from corpus_cases import Cases, answer, as_tensor, at

x0, y0 = 1.2, 0.5
x = torch.tensor(x0, requires_grad=True)
y = torch.tensor(y0, requires_grad=True)
r = torch.sqrt(x**2 + y**2)
r.backward()
u = x0**2 + y0**2
R = math.sqrt(u)
assert math.isclose(float(x.grad), x0 / R, rel_tol=1e-5)

c = Cases("corpus-sqrt-norm")
c.forward(u, R, x0**2, y0**2)
c.correct("x.grad", x.grad, answer(x.grad), "12/13", "0.923077", as_tensor(x.grad))
c.mistake("x.grad", 2 * x0 / R, "sqrt′(u) taken as 1/√u: the ½ forgotten", "wrong_local_derivative",
          edge=["add", "sqrt"])
c.mistake("x.grad", R * 2 * x0, "sqrt′(u) taken as √u", "wrong_local_derivative", edge=["add", "sqrt"])
c.mistake("x.grad", 2 * x0 / (2 * u), "sqrt′(u) taken as 1/(2u)", "wrong_local_derivative", edge=["add", "sqrt"])
c.mistake("x.grad", 1 / (2 * R), "chain rule forgotten inside: d(x²)/dx taken as 1", "wrong_local_derivative",
          edge=["x", "pow"])

c.correct("y.grad", y.grad, answer(y.grad), "5/13", "0.384615", as_tensor(y.grad))
c.mistake("y.grad", 2 * y0 / R, "sqrt′(u) taken as 1/√u: the ½ forgotten", "wrong_local_derivative",
          edge=["add", "sqrt"])
c.mistake("y.grad", y0 / (2 * R), "d(y²)/dy taken as y (the power rule's 2 dropped)", "wrong_local_derivative",
          edge=["y", "pow"])
c.correct("dr_dx", x.grad, "x/sqrt(x^2 + y^2)", "x*(x^2 + y^2)^(-0.5)", "2*x/(2*sqrt(x^2+y^2))")
for formula, value, mistake, edge in [
    ("2*x/sqrt(x^2 + y^2)", 2 * x0 / R, "sqrt′(u) taken as 1/√u", ["add", "sqrt"]),
    ("1/(2*sqrt(x^2 + y^2))", 1 / (2 * R), "d(x²)/dx taken as 1", ["x", "pow"]),
    ("x/(x^2 + y^2)", 2 * x0 / (2 * u), "sqrt′(u) taken as 1/(2u)", ["add", "sqrt"]),
    ("2*x*sqrt(x^2 + y^2)", R * 2 * x0, "sqrt′(u) taken as √u", ["add", "sqrt"]),
]:
    assert abs(at(formula, x=x0, y=y0) - value) < 1e-9
    c.mistake("dr_dx", value, mistake, "wrong_local_derivative", text=formula, edge=edge)
c.write()
