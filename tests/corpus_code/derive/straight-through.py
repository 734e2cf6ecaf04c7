"""code-straight-through: programs for a straight-through quantiser."""

import torch
from code_cases import RAISES, right, verify, wrong

SLUG = "code-straight-through"


def by_hand(P, slope=1.0):
    """x.grad = 2(q - t) · (the slope the student's q has with respect to x: 1 straight through)."""
    x, t = torch.tensor(P["xs"]), torch.tensor(P["ts"])
    q = torch.round(x * 4) / 4
    return {"x.grad": slope * 2 * (q - t)}


START = "x = torch.tensor(xs, requires_grad=True)\nt = torch.tensor(ts)\n"
END = "L = ((q - t) ** 2).sum()\nL.backward()\n"
FUNCTION = """
class Quantise(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x * 4) / 4

    @staticmethod
    def backward(ctx, grad_output):
        return BACKWARD

""".lstrip("\n")

cases = [
    right("ste", START + "q = x + (torch.round(x * 4) / 4 - x).detach()\n" + END),
    right("ste", FUNCTION.replace("BACKWARD", "grad_output") + START + "q = Quantise.apply(x)\n" + END),
    right("ste", START + "with torch.no_grad():\n    step = torch.round(x * 4) / 4 - x\nq = x + step\n" + END),
    wrong("ste", START + "q = torch.round(x * 4) / 4\n" + END,
          at="q = torch.round(x * 4) / 4", kind="missing_path",
          mistake="rounding without a straight-through term: round's zero derivative stops every gradient",
          expect=lambda P: by_hand(P, slope=0.0)),
    wrong("ste", START + "q = x + torch.round(x * 4) / 4 - x\n" + END,
          at="q = x + torch.round", kind="extra_path",
          mistake="the correction not detached: the -x path cancels the straight-through one",
          expect=lambda P: by_hand(P, slope=0.0)),
    wrong("ste", START + "q = x.detach() + (torch.round(x * 4) / 4 - x)\n" + END,
          at="x.detach()", kind="sign_error",
          mistake="the wrong term detached: only the correction's -x path is left, so the gradient's sign flips",
          expect=lambda P: by_hand(P, slope=-1.0)),
    wrong("ste", START + "q = (x + torch.round(x * 4) / 4 - x).detach()\n" + END,
          at="q = (x + torch.round", kind="code_error",
          mistake="the whole quantised value detached: the loss has no graph and backward fails",
          expect=lambda P: RAISES),
    wrong("ste", FUNCTION.replace("BACKWARD", "grad_output / 4") + START + "q = Quantise.apply(x)\n" + END,
          at="return grad_output / 4", kind="custom_function",
          mistake="the custom backward scales the gradient by the step 1/4 (d(4x)/dx taken the wrong way round)",
          expect=lambda P: by_hand(P, slope=0.25)),
    wrong("ste", FUNCTION.replace("BACKWARD", "torch.ones_like(grad_output)") + START + "q = Quantise.apply(x)\n" + END,
          at="torch.ones_like(grad_output)", kind="custom_function",
          mistake="the custom backward returns ones, ignoring grad_output: the loss's 2(q - t) is lost",
          expect=lambda P: {"x.grad": torch.ones(len(P["xs"]))}),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"xs": [-0.2, 0.65, -1.3, 0.9]}])
