"""code-seed-vector: programs seeding a vector output's backward."""

import torch
from code_cases import right, verify, wrong

SLUG = "code-seed-vector"


def vjp(P, seed, x_tracked=True):
    """Jᵀ·seed of y = tanh(W x), written out: dy/d(Wx) = 1 - y²."""
    W, x = torch.tensor(P["W0"]), torch.tensor(P["xs"])
    u = torch.as_tensor(seed, dtype=torch.float32) * (1 - torch.tanh(W @ x) ** 2)
    return {"W.grad": torch.outer(u, x), "x.grad": W.T @ u if x_tracked else None}


START = "W = torch.tensor(W0, requires_grad=True)\nx = torch.tensor(xs, requires_grad=True)\n"
Y = "y = torch.tanh(W @ x)\n"

cases = [
    right("vjp", START + Y + "y.backward(torch.tensor(v))\n"),
    right("vjp", START + Y + "(y * torch.tensor(v)).sum().backward()\n"),
    right("vjp", START + Y + "W.grad, x.grad = torch.autograd.grad(y, (W, x), grad_outputs=torch.tensor(v))\n"),
    wrong("vjp", START + Y + "y.backward(torch.tensor([v[1], v[0]]))\n",
          at="y.backward(", kind="seed_vector", mistake="the seed's two entries swapped",
          expect=lambda P: vjp(P, P["v"][::-1])),
    wrong("vjp", START + Y + "y.sum().backward()\n",
          at="y.sum().backward()", kind="seed_vector", mistake="the seed left out: y summed, i.e. a seed of ones",
          expect=lambda P: vjp(P, [1.0, 1.0])),
    wrong("vjp", START + Y + "y.mean().backward()\n",
          at="y.mean().backward()", kind="seed_vector", mistake="y averaged instead of seeded: a seed of 1/2s",
          expect=lambda P: vjp(P, [0.5, 0.5])),
    wrong("vjp", "W = torch.tensor(W0, requires_grad=True)\nx = torch.tensor(xs)\n" + Y
          + "y.backward(torch.tensor(v))\n",
          at="x = torch.tensor(xs)", kind="untracked_leaf",
          mistake="x made without requires_grad=True: x.grad stays None",
          expect=lambda P: vjp(P, P["v"], x_tracked=False)),
    wrong("vjp", START + "y = torch.tanh(W @ x.detach())\n" + "y.backward(torch.tensor(v))\n",
          at="x.detach()", kind="missing_path", accept=["untracked_leaf"],
          mistake="x detached inside the product: no path reaches x, x.grad stays None",
          expect=lambda P: vjp(P, P["v"], x_tracked=False)),
    wrong("vjp", START + Y + "y.backward(torch.tensor(v), retain_graph=True)\ny.backward(torch.tensor(v))\n",
          at="y.backward(torch.tensor(v))", kind="accumulation",
          mistake="backward called a second time with the same seed: the gradients are counted twice",
          expect=lambda P: vjp(P, [2 * e for e in P["v"]])),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"xs": [-0.5, 0.3, 1.0], "v": [2.0, 0.25]}])
