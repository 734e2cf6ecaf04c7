"""code-gradient-penalty: programs differentiating through torch.autograd.grad."""

import torch
from code_cases import RAISES, right, verify, wrong

SLUG = "code-gradient-penalty"


def by_hand(P, penalty=1.0):
    """∇_w of tanh(w·x) + penalty·λ·gp, with ∇_x D written out as (1 - tanh²(w·x))·w, so that
    gp is a plain function of w (no autograd.grad involved)."""
    w = torch.tensor(P["ws"], requires_grad=True)
    x = torch.tensor(P["xs"])
    t = torch.tanh(w @ x)
    gp = ((1 - t**2) * w.norm() - 1) ** 2
    (t + penalty * P["lam"] * gp).backward()
    return {"w.grad": w.grad}


START = "w = torch.tensor(ws, requires_grad=True)\nx = torch.tensor(xs, requires_grad=True)\nout = torch.tanh(w @ x)\n"
GRAD = "(g,) = torch.autograd.grad(out, x, create_graph=True)\n"
GP = "gp = (g.norm() - 1) ** 2\n"
LOSS = "loss = out + lam * gp\nloss.backward()\n"

cases = [
    right("penalty", START + GRAD + GP + LOSS),
    right("penalty", START + "g = torch.autograd.grad(out, x, create_graph=True)[0]\n"
          "loss = out + lam * (g.pow(2).sum().sqrt() - 1) ** 2\nloss.backward()\n"),
    right("penalty", START + "out.backward(create_graph=True)\ngp = (x.grad.norm() - 1) ** 2\n(lam * gp).backward()\n"),
    right("penalty", "w = torch.tensor(ws, requires_grad=True)\nx = torch.tensor(xs, requires_grad=True)\n"
          "g = torch.func.grad(lambda inp: torch.tanh(w @ inp))(x)\n" + GP
          + "loss = torch.tanh(w @ x) + lam * gp\nloss.backward()\n"),
    wrong("penalty", START + "(g,) = torch.autograd.grad(out, x)\n" + GP + LOSS,
          at="torch.autograd.grad(out, x)", kind="higher_order", accept=["code_error"],
          mistake="create_graph=True missing: the gradient is a constant and grad() frees out's graph, "
                  "so loss.backward() fails",
          expect=lambda P: RAISES),
    wrong("penalty", START + "(g,) = torch.autograd.grad(out, x, retain_graph=True)\n" + GP + LOSS,
          at="retain_graph=True", kind="higher_order",
          mistake="retain_graph=True where create_graph=True was needed: the penalty is a constant to w",
          expect=lambda P: by_hand(P, penalty=0.0)),
    wrong("penalty", START + GRAD + "gp = (g.detach().norm() - 1) ** 2\n" + LOSS,
          at="g.detach()", kind="missing_path", accept=["higher_order"],
          mistake="the input gradient detached in the penalty: the penalty's path to w is cut",
          expect=lambda P: by_hand(P, penalty=0.0)),
    wrong("penalty", START + GRAD + "gp = (g.norm().item() - 1) ** 2\n" + LOSS,
          at=".item()", kind="missing_path",
          mistake="the norm taken as a Python number with .item(): the penalty is a constant",
          expect=lambda P: by_hand(P, penalty=0.0)),
    wrong("penalty", START + GRAD + GP + "loss = out - lam * gp\nloss.backward()\n",
          at="loss = out - lam * gp", kind="sign_error",
          mistake="the penalty subtracted instead of added",
          expect=lambda P: by_hand(P, penalty=-1.0)),
    wrong("penalty", START + GRAD + GP + "loss = out + gp\nloss.backward()\n",
          at="loss = out + gp", kind="wrong_local_derivative", edge=["pow", "mul"],
          mistake="the penalty's weight lam forgotten",
          expect=lambda P: by_hand(P, penalty=1 / P["lam"])),
    wrong("penalty", "w = torch.tensor(ws, requires_grad=True)\nx = torch.tensor(xs)\nout = torch.tanh(w @ x)\n"
          + GRAD + GP + LOSS,
          at="x = torch.tensor(xs)", kind="code_error",
          mistake="x not tracked: torch.autograd.grad cannot differentiate out with respect to it",
          expect=lambda P: RAISES),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"ws": [-0.3, 1.1, 0.6], "xs": [1.2, -0.4, 0.9]}])
