"""code-hessian-vector: programs for a Hessian-vector product."""

import torch
from code_cases import RAISES, right, verify, wrong

SLUG = "code-hessian-vector"


def hessian(x):
    """∂²f/∂x² written out: 6 x_i on the diagonal, the third coordinate off it."""
    a, b, c = x.tolist()
    return torch.tensor([[6 * a, c, b], [c, 6 * b, a], [b, a, 6 * c]])


def gradient(x):
    a, b, c = x.tolist()
    return torch.tensor([3 * a * a + b * c, 3 * b * b + a * c, 3 * c * c + a * b])


def by_hand(P, plus_gradient=False):
    x, v = torch.tensor(P["xs"]), torch.tensor(P["vs"])
    hv = hessian(x) @ v
    return {"x.grad": hv + gradient(x) if plus_gradient else hv}


START = "x = torch.tensor(xs, requires_grad=True)\nv = torch.tensor(vs)\nf = (x ** 3).sum() + x[0] * x[1] * x[2]\n"
GRAD = "(g,) = torch.autograd.grad(f, x, create_graph=True)\n"

cases = [
    right("hvp", START + GRAD + "(g @ v).backward()\n"),
    right("hvp", START + GRAD + "g.backward(v)\n"),
    right("hvp", START + GRAD + "(hv,) = torch.autograd.grad(g, x, grad_outputs=v)\nx.grad = hv\n"),
    right("hvp", START + "f.backward(create_graph=True)\ng = x.grad\nx.grad = None\n(g @ v).backward()\n"),
    wrong("hvp", START + "(g,) = torch.autograd.grad(f, x)\n(g @ v).backward()\n",
          at="torch.autograd.grad(f, x)", kind="higher_order", accept=["code_error"],
          mistake="create_graph=True missing: the first gradient has no graph to differentiate again",
          expect=lambda P: RAISES),
    wrong("hvp", START + "(g,) = torch.autograd.grad(f, x, retain_graph=True)\n(g @ v).backward()\n",
          at="retain_graph=True", kind="higher_order", accept=["code_error"],
          mistake="retain_graph=True where create_graph=True was needed: g still has no graph of its own",
          expect=lambda P: RAISES),
    wrong("hvp", START + "f.backward(create_graph=True)\n(x.grad @ v).backward()\n",
          at="(x.grad @ v).backward()", kind="accumulation",
          mistake="the second backward adds into x.grad, which still holds the first gradient",
          expect=lambda P: by_hand(P, plus_gradient=True)),
    wrong("hvp", START + GRAD + "(g * v).backward()\n",
          at="(g * v).backward()", kind="code_error",
          mistake="the elementwise product g * v instead of the dot product: backward on a vector without a seed",
          expect=lambda P: RAISES),
    wrong("hvp", START + GRAD + "(g.detach() @ v).backward()\n",
          at="g.detach()", kind="higher_order", accept=["code_error"],
          mistake="the first gradient detached before the second backward: nothing left to differentiate",
          expect=lambda P: RAISES),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"xs": [-0.7, 1.2, 0.4], "vs": [1.0, -2.0, 0.3]}])
