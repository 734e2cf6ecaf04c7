"""corpus-log: z = w * log(3x) at x = 2.5, w = 1.5."""

import math

import torch
from corpus_cases import Cases, answer, as_tensor, at

x0, w0 = 2.5, 1.5
x = torch.tensor(x0, requires_grad=True)
w = torch.tensor(w0, requires_grad=True)
z = w * torch.log(3 * x)
z.backward()
v = 3 * x0
assert math.isclose(float(x.grad), w0 / x0, rel_tol=1e-6)

c = Cases("corpus-log")
c.forward(v, math.log(v), w0 * math.log(v))
c.correct("x.grad", x.grad, answer(x.grad), "0.6", "3/5", as_tensor(x.grad), "0.60")
c.mistake("x.grad", w0 * math.log(v) * 3, "d log(v)/dv taken as log v", "wrong_local_derivative", edge=["mul", "log"])
c.mistake("x.grad", w0 * v * 3, "d log(v)/dv taken as v", "wrong_local_derivative", edge=["mul", "log"])
c.mistake("x.grad", -w0 * 3 / v**2, "d log(v)/dv taken as -1/v²", "wrong_local_derivative", edge=["mul", "log"])
c.mistake("x.grad", w0 / v, "chain rule forgotten inside the log: d(3x)/dx taken as 1",
          "wrong_local_derivative", edge=["x", "mul"])
c.mistake("x.grad", 1 / x0, "d(w·log v)/d(log v) taken as 1: the w dropped", "wrong_local_derivative",
          edge=["log", "mul"])

c.correct("w.grad", w.grad, answer(w.grad), as_tensor(w.grad))
c.mistake("w.grad", 1 / v, "differentiated the log as well: used 1/(3x) where the factor is log(3x)",
          "wrong_local_derivative", edge=["w", "mul"])
c.correct("dz_dx", x.grad, "w/x", "3*w/(3*x)", "w*x^(-1)")
for formula, value, mistake, edge in [
    ("3*w*log(3*x)", w0 * math.log(v) * 3, "d log(v)/dv taken as log v", ["mul", "log"]),
    ("w/(3*x)", w0 / v, "chain rule forgotten inside the log", ["x", "mul"]),
    ("1/x", 1 / x0, "the w dropped", ["log", "mul"]),
    ("9*w*x", w0 * v * 3, "d log(v)/dv taken as v", ["mul", "log"]),
]:
    assert abs(at(formula, w=w0, x=x0) - value) < 1e-9
    c.mistake("dz_dx", value, mistake, "wrong_local_derivative", text=formula, edge=edge)
c.write()
