"""corpus-silu: z = x * sigmoid(x) at x = 1.25."""

import math

import torch
from corpus_cases import Cases, answer, as_tensor, at

x0 = 1.25
x = torch.tensor(x0, requires_grad=True)
z = x * torch.sigmoid(x)
z.backward()
s = 1 / (1 + math.exp(-x0))
direct, through = s, x0 * s * (1 - s)
assert math.isclose(float(x.grad), direct + through, rel_tol=1e-5)
direct_path = ["x", "mul", "z"]
sigmoid_path = ["x", "sigmoid", "mul", "z"]

c = Cases("corpus-silu")
c.forward(s, x0 * s)
c.correct("x.grad", x.grad, answer(x.grad), as_tensor(x.grad), f"{float(x.grad):.5f}", f"[{answer(x.grad)}]")
c.mistake("x.grad", through, "product rule half done: the σ(x)·1 term forgotten", "missing_path",
          paths=[direct_path])
c.mistake("x.grad", s + x0 * s, "σ′ taken as σ", "wrong_local_derivative", edge=["x", "sigmoid"])
c.mistake("x.grad", s + x0 * (1 - s), "σ′ taken as 1 - σ", "wrong_local_derivative", edge=["x", "sigmoid"])
c.mistake("x.grad", s + x0, "σ′ taken as 1 (chain rule forgotten at the sigmoid)", "wrong_local_derivative",
          edge=["x", "sigmoid"])
c.mistake("x.grad", direct * through, "multiplied the two paths instead of adding them", "product_of_paths",
          paths=[direct_path, sigmoid_path])
c.mistake("x.grad", direct - through, "sign of the path through σ flipped", "sign_error", paths=[sigmoid_path])
c.mistake("x.grad", x0 * (1 - s), "two mistakes: the σ(x)·1 term forgotten and σ′ taken as 1 - σ", "two_mistakes",
          components=[{"kind": "missing_path", "paths": [direct_path]},
                      {"kind": "wrong_local_derivative", "edge": ["x", "sigmoid"]}])
c.mistake("x.grad", 0.37, "a guess", "unknown")
c.correct("dz_dx", x.grad, "sigmoid(x) + x*sigmoid(x)*(1 - sigmoid(x))", "sigmoid(x)*(1 + x*(1 - sigmoid(x)))",
          "sigmoid(x) + x*sigmoid(x) - x*sigmoid(x)^2")
for formula, value, mistake, kind, expected in [
    ("x*sigmoid(x)*(1 - sigmoid(x))", through, "the σ(x)·1 term forgotten", "missing_path",
     {"paths": [direct_path]}),
    ("sigmoid(x) + x*sigmoid(x)", s + x0 * s, "σ′ taken as σ", "wrong_local_derivative",
     {"edge": ["x", "sigmoid"]}),
    ("sigmoid(x) - x*sigmoid(x)*(1 - sigmoid(x))", direct - through, "sign of the path through σ flipped",
     "sign_error", {"paths": [sigmoid_path]}),
    ("sigmoid(x)*x*sigmoid(x)*(1 - sigmoid(x))", direct * through, "the two paths multiplied",
     "product_of_paths", {"paths": [direct_path, sigmoid_path]}),
]:
    assert abs(at(formula, x=x0) - value) < 1e-9
    c.mistake("dz_dx", value, mistake, kind, text=formula, **expected)
c.write()
