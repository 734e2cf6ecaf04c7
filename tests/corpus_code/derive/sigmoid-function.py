"""code-sigmoid-function: fixes of a custom sigmoid Function's backward."""

import torch
from code_cases import RAISES, right, verify, wrong

SLUG = "code-sigmoid-function"


def sig(x):
    return 1 / (1 + torch.exp(-x))


def grads(P, local):
    """x.grad = c · (the student's local derivative at x): the rest of the chain is right."""
    x, c = torch.tensor(P["xs"]), torch.tensor(P["cs"])
    return {"x.grad": c * local(x)}


HEAD = """
class MySigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
"""
TAIL = """
x = torch.tensor(xs, requires_grad=True)
c = torch.tensor(cs)
L = (c * MySigmoid.apply(x)).sum()
L.backward()
"""


def function(forward: str, backward: str, tail: str = TAIL) -> str:
    return (HEAD + forward + "\n    @staticmethod\n    def backward(ctx, grad_output):\n" + backward + tail)


SAVE_X = "        ctx.save_for_backward(x)\n        return 1 / (1 + torch.exp(-x))\n"
FROM_X = "        (x,) = ctx.saved_tensors\n        s = 1 / (1 + torch.exp(-x))\n"

cases = [
    right("fix", function(SAVE_X, FROM_X + "        return grad_output * s * (1 - s)\n")),
    right("fix", function("        s = 1 / (1 + torch.exp(-x))\n        ctx.save_for_backward(s)\n        return s\n",
                          "        (s,) = ctx.saved_tensors\n        return grad_output * s * (1 - s)\n")),
    wrong("fix", function("        s = 1 / (1 + torch.exp(-x))\n        ctx.save_for_backward(s)\n        return s\n",
                          FROM_X + "        return grad_output * s * (1 - s)\n"),
          at="ctx.save_for_backward(s)", kind="custom_function",
          mistake="the starter left as it was: the output is saved, and backward applies the sigmoid to it again",
          expect=lambda P: grads(P, lambda x: sig(sig(x)) * (1 - sig(sig(x))))),
    wrong("fix", function(SAVE_X, FROM_X + "        return s * (1 - s)\n"),
          at="return s * (1 - s)", kind="custom_function",
          mistake="backward ignores grad_output: returns the local derivative alone, so c never reaches x.grad",
          expect=lambda P: {"x.grad": sig(torch.tensor(P["xs"])) * (1 - sig(torch.tensor(P["xs"])))}),
    wrong("fix", function(SAVE_X, FROM_X + "        return grad_output * s\n"),
          at="return grad_output * s", kind="custom_function", accept=["wrong_local_derivative"],
          mistake="the sigmoid's derivative taken as the sigmoid itself",
          expect=lambda P: grads(P, sig)),
    wrong("fix", function(SAVE_X, "        (x,) = ctx.saved_tensors\n"
                          "        return grad_output * torch.exp(-x) / (1 + torch.exp(-x))\n"),
          at="return grad_output * torch.exp(-x)", kind="custom_function", accept=["wrong_local_derivative"],
          mistake="d/dx 1/(1 + e^-x) written as e^-x/(1 + e^-x): the denominator's square forgotten",
          expect=lambda P: grads(P, lambda x: 1 - sig(x))),
    wrong("fix", function(SAVE_X, FROM_X + "        return -grad_output * s * (1 - s)\n"),
          at="return -grad_output", kind="custom_function", accept=["sign_error"],
          mistake="a minus sign in backward (the derivative of e^-x carried over as a sign)",
          expect=lambda P: grads(P, lambda x: -sig(x) * (1 - sig(x)))),
    wrong("fix", function(SAVE_X, FROM_X + "        return grad_output * s * (1 - s), grad_output\n"),
          at="return grad_output * s * (1 - s), grad_output", kind="custom_function", accept=["code_error"],
          mistake="backward returns two gradients (one for x and grad_output again) for a forward with one input",
          expect=lambda P: RAISES),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"xs": [0.3, -2.0, 1.2], "cs": [-0.5, 1.0, 2.5]}])
