"""code-rmsnorm: programs for RMSNorm."""

import torch
from code_cases import RAISES, right, verify, wrong

SLUG = "code-rmsnorm"


def by_hand(P, through_rms=1.0, through_x=1.0, g_tracked=True):
    """dL/dx_j = c_j g_j / r  -  x_j Σ_i c_i g_i x_i / (n r³); dL/dg = c ⊙ x / r. The two
    roads of x (the numerator, the rms) can each be cut by the mistake."""
    x, g, c = torch.tensor(P["xs"]), torch.tensor(P["gs"]), torch.tensor(P["cs"])
    n = len(x)
    r = torch.sqrt((x**2).mean() + P["eps"])
    dx = through_x * c * g / r - through_rms * x * (c * g * x).sum() / (n * r**3)
    return {"x.grad": dx, "g.grad": c * x / r if g_tracked else None}


START = "x = torch.tensor(xs, requires_grad=True)\ng = torch.tensor(gs, requires_grad=True)\nc = torch.tensor(cs)\n"
RMS = "rms = torch.sqrt((x ** 2).mean() + eps)\n"
Y = "y = g * x / rms\n"
END = "L = (c * y).sum()\nL.backward()\n"

cases = [
    right("rmsnorm", START + RMS + Y + END),
    right("rmsnorm", START + "y = x * torch.rsqrt(x.pow(2).mean() + eps) * g\n" + END),
    wrong("rmsnorm", START + "rms = torch.sqrt((x ** 2).mean() + eps).detach()\n" + Y + END,
          at=".detach()", kind="missing_path",
          mistake="the rms detached (treated as a constant scale): x's road through the rms is cut",
          expect=lambda P: by_hand(P, through_rms=0.0)),
    wrong("rmsnorm", START + "rms = torch.sqrt((x.data ** 2).mean() + eps)\n" + Y + END,
          at="x.data", kind="missing_path",
          mistake="the rms computed from x.data: x's road through the rms is cut",
          expect=lambda P: by_hand(P, through_rms=0.0)),
    wrong("rmsnorm", START + RMS + "y = g * x.detach() / rms\n" + END,
          at="x.detach()", kind="missing_path",
          mistake="x detached in the numerator: only the road through the rms is left",
          expect=lambda P: by_hand(P, through_x=0.0)),
    wrong("rmsnorm", "x = torch.tensor(xs, requires_grad=True)\ng = torch.tensor(gs)\nc = torch.tensor(cs)\n"
          + RMS + Y + END,
          at="g = torch.tensor(gs)", kind="untracked_leaf",
          mistake="the gain made without requires_grad: g.grad stays None",
          expect=lambda P: by_hand(P, g_tracked=False)),
    wrong("rmsnorm", START + RMS + "rms.clamp_(min=eps)\n" + Y + END,
          at="rms.clamp_(min=eps)", kind="code_error",
          mistake="the rms clamped in place: sqrt saved its output for backward, which the in-place op modified",
          expect=lambda P: RAISES),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"xs": [-1.0, 0.7, 0.3, -2.2], "cs": [1.0, 0.2, -0.6, 0.9]}])
