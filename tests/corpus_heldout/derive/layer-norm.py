"""heldout-layer-norm: y = layer_norm(x; g, b), L = Σ (y - t)²."""

import torch
import torch.nn.functional as F
from heldout_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([1.5, -0.5, 2.0, 0.25])
gd = torch.tensor([1.0, 0.5, -1.0, 2.0])
bd = torch.tensor([0.1, -0.2, 0.3, 0.0])
t = torch.tensor([0.5, -1.0, 1.5, 2.0])
x, g, b = (v.clone().requires_grad_(True) for v in (xd, gd, bd))
c = Cases("heldout-layer-norm")
y = F.layer_norm(x, (4,), weight=g, bias=b)
L = ((y - t) ** 2).sum()
c.graph(L)
L.backward()

# by hand: x̂ = (x - μ)/σ, y = g x̂ + b; the upstream gradient u = 2(y - t)
mu = xd.mean()
sigma = torch.sqrt(((xd - mu) ** 2).mean() + 1e-5)
xh = (xd - mu) / sigma
yd = gd * xh + bd
up = 2 * (yd - t)
gx = gd * up  # dL/dx̂


def through_norm(gxh: torch.Tensor, mean_term: bool = True, var_term: bool = True, var_sign: float = -1
                 ) -> torch.Tensor:
    """dL/dx from dL/dx̂: (gxh - mean(gxh) - x̂·mean(gxh·x̂))/σ; a student may drop either term."""
    out = gxh.clone()
    if mean_term:
        out = out - gxh.mean()
    if var_term:
        out = out + var_sign * xh * (gxh * xh).mean()
    return out / sigma


assert torch.allclose(x.grad, through_norm(gx), atol=1e-5)
assert torch.allclose(g.grad, up * xh, atol=1e-5) and torch.allclose(b.grad, up, atol=1e-5)
c.forward(mu, sigma, xh, yd - t)
edge_x = ["x", "native_layer_norm"]

c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", through_norm(gx, mean_term=False, var_term=False),
          "the mean and the variance treated as constants: dx̂/dx taken as 1/σ", "wrong_local_derivative", edge=edge_x)
c.mistake("x.grad", through_norm(gx, var_term=False), "the variance treated as a constant (only the mean's term)",
          "wrong_local_derivative", edge=edge_x)
c.mistake("x.grad", through_norm(gx, mean_term=False), "the mean treated as a constant (only the variance's term)",
          "wrong_local_derivative", edge=edge_x)
c.mistake("x.grad", through_norm(gx, var_sign=+1), "the variance term's sign flipped", "wrong_local_derivative",
          edge=edge_x)
c.mistake("x.grad", through_norm(up), "the scale g forgotten going back through the layer norm",
          "wrong_local_derivative", edge=edge_x)
c.mistake("x.grad", through_norm(gx) / 2, "d(e²)/de taken as e: the 2 dropped", "wrong_local_derivative",
          edge=["sub", "pow"])

c.correct("g.grad", g.grad, answer(g.grad), as_tensor(g.grad))
c.mistake("g.grad", up, "d(g·x̂ + b)/dg taken as 1: the x̂ factor dropped", "wrong_local_derivative",
          edge=["g", "native_layer_norm"])
c.mistake("g.grad", up * (xd - mu), "used x - μ for x̂ (the division by σ forgotten)", "wrong_local_derivative",
          edge=["g", "native_layer_norm"])
c.mistake("g.grad", (up * xh).sum(), "summed the gradient over the features", "shape")

c.correct("b.grad", b.grad, answer(b.grad), bare(b.grad), as_tensor(b.grad))
c.mistake("b.grad", up * gd, "the shift's gradient scaled by g as well", "wrong_local_derivative",
          edge=["b", "native_layer_norm"])
c.mistake("b.grad", up.sum(), "summed the gradient into one number", "shape")
c.write()
