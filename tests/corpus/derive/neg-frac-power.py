"""corpus-neg-frac-power: z = x**-2 + y**0.5 at x = 1.25, y = 2.25."""

import torch
from corpus_cases import Cases, answer, as_tensor, at

x0, y0 = 1.25, 2.25
x = torch.tensor(x0, requires_grad=True)
y = torch.tensor(y0, requires_grad=True)
z = x**-2 + y**0.5
z.backward()
assert abs(float(x.grad) - (-2 * x0**-3)) < 1e-5 and abs(float(y.grad) - 0.5 * y0**-0.5) < 1e-6

c = Cases("corpus-neg-frac-power")
c.forward(x0**-2, y0**0.5, x0**-2 + y0**0.5)
c.correct("x.grad", x.grad, answer(x.grad), "-1.024", "-128/125", as_tensor(x.grad))
c.mistake("x.grad", -2 * x0**-1, "exponent raised instead of lowered: -2·x⁻¹", "wrong_local_derivative",
          edge=["x", "pow"])
c.mistake("x.grad", -2 * x0**-2, "exponent not lowered: -2·x⁻²", "wrong_local_derivative", edge=["x", "pow"])
c.mistake("x.grad", -(x0**-3), "the exponent -2 not brought down as a factor: -x⁻³", "wrong_local_derivative",
          edge=["x", "pow"])
c.mistake("x.grad", 2 * x0**-3, "the minus of the negative exponent lost (a sign flip on the only path, "
          "or pow's catalogued mistake)", "sign_error", paths=[["x", "pow", "add", "z"]],
          accept=["wrong_local_derivative"], edge=["x", "pow"])

c.correct("y.grad", y.grad, answer(y.grad), "1/3", "0.333333", as_tensor(y.grad))
c.mistake("y.grad", 0.5 * y0**0.5, "exponent not lowered: 0.5·y^0.5", "wrong_local_derivative", edge=["y", "pow"])
c.mistake("y.grad", 0.5 * y0**-1.5, "exponent lowered twice: 0.5·y^-1.5", "wrong_local_derivative",
          edge=["y", "pow"])
c.mistake("y.grad", y0**-0.5, "the ½ not brought down: y^-0.5", "wrong_local_derivative", edge=["y", "pow"])
c.correct("dz_dx", x.grad, "-2*x^(-3)", "-2/x^3")
for formula, value, mistake, kind, expected in [
    ("-2*x^(-1)", -2 * x0**-1, "exponent raised instead of lowered", "wrong_local_derivative",
     {"edge": ["x", "pow"]}),
    ("-2*x^(-2)", -2 * x0**-2, "exponent not lowered", "wrong_local_derivative", {"edge": ["x", "pow"]}),
    ("-x^(-3)", -(x0**-3), "the exponent not brought down", "wrong_local_derivative", {"edge": ["x", "pow"]}),
    ("2*x^(-3)", 2 * x0**-3, "the minus of the exponent lost (a sign flip, or pow's catalogued mistake)", "sign_error",
     {"paths": [["x", "pow", "add", "z"]], "accept": ["wrong_local_derivative"], "edge": ["x", "pow"]}),
]:
    assert abs(at(formula, x=x0, y=y0) - value) < 1e-9
    c.mistake("dz_dx", value, mistake, kind, text=formula, **expected)
c.write()
