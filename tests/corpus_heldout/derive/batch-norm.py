"""heldout-batch-norm: per-feature statistics over a batch, var = E[x²] - μ², L = Σ X̂ ⊙ C."""

import torch
from heldout_cases import Cases, answer, as_tensor, believed, paths_from, rounded, student_run

Xd = torch.tensor([[1.5, -0.5], [0.5, 2.0], [-1.0, 1.0]])
C = torch.tensor([[1.0, 0.5], [-2.0, 1.0], [0.5, -1.5]])


def forward(X: torch.Tensor, mean0: object = lambda v: v.mean(dim=0), root: object = torch.sqrt) -> tuple:
    mu = mean0(X)
    ex2 = mean0(X**2)
    var = ex2 - mu**2
    Xh = (X - mu) / root(var + 1e-5)
    return (Xh * C).sum(), mu, ex2, var, Xh


X = Xd.clone().requires_grad_(True)
L, mu, ex2, var, Xh = forward(X)
c = Cases("heldout-batch-norm")
c.graph(L)
leaves = {"X": X}
all_paths = paths_from(L, leaves, "L", "X")
through_mu = paths_from(L, leaves, "L", "X", through=[mu])
through_var = paths_from(L, leaves, "L", "X", through=[var])
through_mu_centre = paths_from(L, leaves, "L", "X", through=[mu], avoiding=[var])
assert len(all_paths) == 4 and len(through_var) == 2 and len(through_mu) == 2 and len(through_mu_centre) == 1
L.backward()
s = torch.sqrt(var.detach() + 1e-5)
xh = Xh.detach()
assert torch.allclose(X.grad, (C - C.mean(0) - xh * (C * xh).mean(0)) / s, atol=1e-5)

statistics = [list(p) for p in sorted({tuple(p) for p in through_mu + through_var})]
c.correct("X.grad", X.grad, answer(X.grad), as_tensor(X.grad), rounded(X.grad))
c.mistake("X.grad", C / s, "the batch mean and variance treated as constants", "missing_path", paths=statistics)
c.mistake("X.grad", (C - C.mean(0)) / s, "the variance treated as a constant (the mean differentiated)",
          "missing_path", paths=through_var)
c.mistake("X.grad", (C - xh * (C * xh).mean(0)) / s, "the mean subtracted in X - μ treated as a constant",
          "missing_path", paths=through_mu_centre)
c.mistake("X.grad", (C + C.mean(0) - xh * (C * xh).mean(0)) / s, "d(X - μ)/dμ taken as +1: the centring's sign lost",
          "sign_error", paths=through_mu_centre, accept=["wrong_local_derivative"], edge=["mean", "sub"])


def wrong_grad(**beliefs: object) -> torch.Tensor:
    with student_run():
        Xs = Xd.clone().requires_grad_(True)
        forward(Xs, **beliefs)[0].backward()
        return Xs.grad


def on_mu(belief: object) -> object:
    """The belief for μ = X.mean(0) only (the mean of X² keeps the right derivative)."""
    return lambda v: belief(v) if v.grad_fn is None else v.mean(dim=0)


mean_as_sum = believed(lambda v: v.mean(dim=0), lambda g, v: (g.expand_as(v),))
c.mistake("X.grad", wrong_grad(mean0=mean_as_sum), "the 1/N of both batch means dropped: d mean/dx taken as 1",
          "two_mistakes", components=[{"kind": "wrong_local_derivative", "edge": ["X", "mean"]},
                                      {"kind": "wrong_local_derivative", "edge": ["pow", "mean"]}])
c.mistake("X.grad", wrong_grad(mean0=on_mu(mean_as_sum)), "the 1/N of μ = X.mean(0) dropped (dμ/dX taken as 1)",
          "wrong_local_derivative", edge=["X", "mean"])
over_all = believed(lambda v: v.mean(dim=0), lambda g, v: (torch.full_like(v, float(g.sum()) / v.numel()),))
c.mistake("X.grad", wrong_grad(mean0=on_mu(over_all)),
          "μ's gradient spread evenly over every entry of X (a mean over the batch and the features)",
          "wrong_local_derivative", edge=["X", "mean"])
no_half = believed(torch.sqrt, lambda g, v: (g / torch.sqrt(v),))
c.mistake("X.grad", wrong_grad(root=no_half), "d√v/dv taken as 1/√v: the ½ dropped", "wrong_local_derivative",
          edge=["add", "sqrt"])
c.write()
