"""code-hook-clip: fixes of a gradient-clipping hook."""

import torch
from code_cases import right, verify, wrong

SLUG = "code-hook-clip"


def by_hand(P, clip_h=True, clip_w=False):
    """dL/dh = 2h; w.grad = (dL/dh, clipped where the hook acts) · x, clipped again if on w."""
    w, x = torch.tensor(P["ws"]), torch.tensor(P["xs"])
    dh = 2 * w * x
    if clip_h:
        dh = dh.clamp(-1, 1)
    dw = dh * x
    return {"w.grad": dw.clamp(-1, 1) if clip_w else dw}


START = "w = torch.tensor(ws, requires_grad=True)\nx = torch.tensor(xs)\nh = w * x\n\n"
CLIP = "def clip(grad):\n    return grad.clamp(-1.0, 1.0)\n\n"
LOSS = "L = (h ** 2).sum()\nL.backward()\n"

cases = [
    right("fix", START + CLIP + "h.register_hook(clip)\n" + LOSS),
    right("fix", START + "h.register_hook(lambda g: torch.clamp(g, min=-1.0, max=1.0))\n" + LOSS),
    wrong("fix", START + "def clip(grad):\n    grad.clamp(-1.0, 1.0)\n\nh.register_hook(clip)\n" + LOSS,
          at="    grad.clamp(-1.0, 1.0)", kind="hook",
          mistake="the starter kept: the hook computes the clipped gradient but does not return it",
          expect=lambda P: by_hand(P, clip_h=False)),
    wrong("fix", START + CLIP + "w.register_hook(clip)\n" + LOSS,
          at="w.register_hook(clip)", kind="hook",
          mistake="the hook registered on w, not h: w's final gradient is clipped instead of h's",
          expect=lambda P: by_hand(P, clip_h=False, clip_w=True)),
    wrong("fix", START + CLIP + LOSS + "h.register_hook(clip)\n",
          at="h.register_hook(clip)", kind="hook",
          mistake="the hook registered after backward(): it never sees the gradient",
          expect=lambda P: by_hand(P, clip_h=False)),
    wrong("fix", START + CLIP + "L = (h ** 2).sum()\nL.register_hook(clip)\nL.backward()\n",
          at="L.register_hook(clip)", kind="hook",
          mistake="the hook registered on the loss: it clips the seed 1, which changes nothing",
          expect=lambda P: by_hand(P, clip_h=False)),
    wrong("fix", START + "def clip(grad):\n    return h.clamp(-1.0, 1.0)\n\nh.register_hook(clip)\n" + LOSS,
          at="return h.clamp", kind="hook",
          mistake="the hook returns the clipped activations h instead of the clipped gradient",
          expect=lambda P: {"w.grad": (torch.tensor(P["ws"]) * torch.tensor(P["xs"])).clamp(-1, 1)
                            * torch.tensor(P["xs"])}),
    wrong("fix", START.replace("h = w * x\n", "h = (w * x).detach()\n") + CLIP
          + "h.requires_grad_()\nh.register_hook(clip)\n" + LOSS,
          at=".detach()", kind="missing_path", accept=["untracked_leaf"],
          mistake="h detached (and re-tracked) so the hook can be registered on a leaf: nothing flows back to w",
          expect=lambda P: {"w.grad": None}),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"ws": [-0.3, 1.5, 0.2]}])
