"""heldout-poly-features: y = w · [x, x², x³], L = (y - t)²."""

import torch
from heldout_cases import Cases, answer, as_tensor, at, bare, paths_from, rounded

x0, t = 1.5, 0.5
wd = torch.tensor([0.5, -1.0, 0.25])
x = torch.tensor(x0, requires_grad=True)
w = wd.clone().requires_grad_(True)
c = Cases("heldout-poly-features")
sq, cube = x**2, x**3
phi = torch.stack([x, sq, cube])
y = w @ phi
L = (y - t) ** 2
c.graph(L)
leaves = {"x": x, "w": w}
linear = paths_from(L, leaves, "L", "x", avoiding=[sq, cube])
w_path = paths_from(L, leaves, "L", "w")
assert len(linear) == len(w_path) == 1
L.backward()

feats = torch.tensor([x0, x0**2, x0**3])
Y = float(wd @ feats)
up = 2 * (Y - t)
w0, w1, w2 = wd.tolist()


def dx(d_sq: float = 2 * x0, d_cube: float = 3 * x0**2, d_lin: float = 1.0) -> float:
    """dL/dx with the local derivatives of x, x² and x³ a student used."""
    return up * (w0 * d_lin + w1 * d_sq + w2 * d_cube)


assert abs(float(x.grad) - dx()) < 1e-5 and torch.allclose(w.grad, up * feats)
c.forward(feats, Y, Y - t)

c.correct("x.grad", x.grad, answer(x.grad), as_tensor(x.grad), rounded(x.grad))
c.mistake("x.grad", dx(d_cube=3 * x0), "d(x³)/dx taken as 3x", "wrong_local_derivative", edge=["x", "pow"])
c.mistake("x.grad", dx(d_cube=x0**2), "d(x³)/dx taken as x²: the exponent 3 not brought down",
          "wrong_local_derivative", edge=["x", "pow"])
c.mistake("x.grad", dx(d_sq=x0), "d(x²)/dx taken as x", "wrong_local_derivative", edge=["x", "pow"])
c.mistake("x.grad", dx(d_lin=0.0), "the linear feature x forgotten (d x/dx counted as 0)", "missing_path",
          paths=linear)
c.mistake("x.grad", dx() / 2, "d(e²)/de taken as e: the 2 dropped", "wrong_local_derivative", edge=["sub", "pow"])

c.correct("w.grad", w.grad, answer(w.grad), bare(w.grad), as_tensor(w.grad))
c.mistake("w.grad", up / 2 * feats, "d(e²)/de taken as e: the 2 dropped", "wrong_local_derivative",
          edge=["sub", "pow"])
c.mistake("w.grad", -up * feats, "sign flipped: differentiated (t - y)² as 2(t - y)", "sign_error", paths=w_path)
c.mistake("w.grad", feats, "gave the features φ: the chain rule stopped at y (dL/dy taken as 1)", "forward_value",
          accept=["wrong_local_derivative"], edge=["sub", "pow"])

poly = "(0.5*x - x^2 + 0.25*x^3 - 0.5)"
c.correct_formula("dL_dx", x.grad, {"x": x0}, f"2*{poly}*(0.5 - 2*x + 0.75*x^2)",
                  f"{poly}*(1 - 4*x + 1.5*x^2)")
for formula, value, mistake, kind, where in [
    (f"2*{poly}*(0.5 - 2*x + 0.75*x)", dx(d_cube=3 * x0), "d(x³)/dx taken as 3x", "wrong_local_derivative",
     {"edge": ["x", "pow"]}),
    (f"2*{poly}*(-2*x + 0.75*x^2)", dx(d_lin=0.0), "the linear feature forgotten", "missing_path",
     {"paths": linear}),
    (f"{poly}*(0.5 - 2*x + 0.75*x^2)", dx() / 2, "the 2 of the square dropped", "wrong_local_derivative",
     {"edge": ["sub", "pow"]}),
]:
    assert abs(at(formula, x=x0) - value) < 1e-9, formula
    c.mistake("dL_dx", value, mistake, kind, text=formula, **where)
c.write()
