"""corpus-softplus-by-hand: s = log(1 + exp(w x)), w = 0.5, x = 1.5 (u = 0.75)."""

import math

import torch
from corpus_cases import Cases, answer, as_tensor, at

w0, x0 = 0.5, 1.5
w = torch.tensor(w0, requires_grad=True)
x = torch.tensor(x0, requires_grad=True)
s = torch.log(1 + torch.exp(w * x))
s.backward()
u = w0 * x0
e = math.exp(u)
sig = e / (1 + e)
assert math.isclose(float(x.grad), sig * w0, rel_tol=1e-5) and math.isclose(float(w.grad), sig * x0, rel_tol=1e-5)

c = Cases("corpus-softplus-by-hand")
c.forward(u, e, 1 + e, math.log(1 + e))
c.correct("x.grad", x.grad, answer(x.grad), as_tensor(x.grad), f"{float(x.grad):.5f}")
c.mistake("x.grad", 1 / (1 + e) * w0, "chain rule forgotten at exp: d exp(u)/du taken as 1",
          "wrong_local_derivative", edge=["mul", "exp"])
c.mistake("x.grad", e * w0, "d log(v)/dv taken as 1: the 1/(1 + e^u) dropped", "wrong_local_derivative",
          edge=["add", "log"])
c.mistake("x.grad", math.log(1 + e) * e * w0, "d log(v)/dv taken as log v", "wrong_local_derivative",
          edge=["add", "log"])
c.mistake("x.grad", sig, "d(w·x)/dx taken as 1: the w dropped", "wrong_local_derivative", edge=["x", "mul"])

c.correct("w.grad", w.grad, answer(w.grad), as_tensor(w.grad))
c.mistake("w.grad", 1 / (1 + e) * x0, "chain rule forgotten at exp: d exp(u)/du taken as 1",
          "wrong_local_derivative", edge=["mul", "exp"])
c.mistake("w.grad", e * x0, "d log(v)/dv taken as 1: the 1/(1 + e^u) dropped", "wrong_local_derivative",
          edge=["add", "log"])
c.mistake("w.grad", sig * w0, "used w (the other operand's partner) instead of x", "wrong_local_derivative",
          edge=["w", "mul"])
c.correct("ds_dx", x.grad, "w*sigmoid(w*x)", "w*exp(w*x)/(1 + exp(w*x))")
for formula, value, mistake, edge in [
    ("w/(1 + exp(w*x))", 1 / (1 + e) * w0, "chain rule forgotten at exp", ["mul", "exp"]),
    ("w*exp(w*x)", e * w0, "d log(v)/dv taken as 1", ["add", "log"]),
    ("sigmoid(w*x)", sig, "d(w·x)/dx taken as 1: the w dropped", ["x", "mul"]),
]:
    assert abs(at(formula, w=w0, x=x0) - value) < 1e-9
    c.mistake("ds_dx", value, mistake, "wrong_local_derivative", text=formula, edge=edge)
c.write()
