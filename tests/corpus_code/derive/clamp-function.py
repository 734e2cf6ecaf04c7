"""code-clamp-function: fixes of a custom clamp Function's backward."""

import torch
from code_cases import RAISES, right, verify, wrong

SLUG = "code-clamp-function"


def by_hand(P, slope):
    """x.grad = c · (the student's slope of the clamp at x)."""
    x, c = torch.tensor(P["xs"]), torch.tensor(P["cs"])
    inside = ((x >= P["lo"]) & (x <= P["hi"])).float()
    return {"x.grad": c * slope(inside)}


HEAD = """
class MyClamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
""".lstrip("\n")
INSIDE = "        inside = (x >= ctx.lo) & (x <= ctx.hi)\n"
TAIL = ("\nx = torch.tensor(xs, requires_grad=True)\nc = torch.tensor(cs)\n"
        "L = (c * MyClamp.apply(x, lo, hi)).sum()\nL.backward()\n")


def function(body: str) -> str:
    return HEAD + body + TAIL


cases = [
    right("fix", function(INSIDE + "        return grad_output * inside, None, None\n")),
    right("fix", function(INSIDE + "        zero = torch.zeros_like(grad_output)\n"
                          "        return torch.where(inside, grad_output, zero), None, None\n")),
    wrong("fix", function(INSIDE + "        return grad_output * inside\n"),
          at="return grad_output * inside", kind="custom_function", accept=["code_error"],
          mistake="the starter kept: one gradient returned for forward's three inputs",
          expect=lambda P: RAISES),
    wrong("fix", function("        outside = (x < ctx.lo) | (x > ctx.hi)\n"
                          "        return grad_output * outside, None, None\n"),
          at="outside = (x < ctx.lo) | (x > ctx.hi)", kind="custom_function", accept=["dead_branch"],
          mistake="the mask read backwards: the gradient passes where the clamp is flat "
                  "and stops where it is the identity",
          expect=lambda P: by_hand(P, lambda m: 1 - m)),
    wrong("fix", function(INSIDE + "        return inside.float(), None, None\n"),
          at="return inside.float(), None, None", kind="custom_function",
          mistake="grad_output ignored: the mask returned alone, so c never reaches x.grad",
          expect=lambda P: {"x.grad": by_hand({**P, "cs": [1.0] * len(P["cs"])}, lambda m: m)["x.grad"]}),
    wrong("fix", function("        return grad_output, None, None\n"),
          at="return grad_output, None, None", kind="custom_function", accept=["dead_branch"],
          mistake="the clamp's flat parts ignored in backward: the gradient passes everywhere",
          expect=lambda P: by_hand(P, lambda m: torch.ones_like(m))),
    wrong("fix", function(INSIDE + "        return None, grad_output * inside, None\n"),
          at="return None, grad_output * inside, None", kind="custom_function", accept=["code_error"],
          mistake="the gradients returned in the wrong order: x's gradient given in lo's slot, "
                  "which is a Python number",
          expect=lambda P: RAISES),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"xs": [0.5, -0.3, 1.7, -2.2], "cs": [2.0, 1.5, -1.0, 0.7]}])
