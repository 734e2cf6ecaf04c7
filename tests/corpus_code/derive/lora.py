"""code-lora: fixes of which tensors a LoRA adapter trains."""

import torch
from code_cases import RAISES, right, verify, wrong

SLUG = "code-lora"


def by_hand(P, a=True, b=True, w=False):
    """With r = 2(y - t): dL/dA = s (Bᵀ r) xᵀ, dL/dB = s r (A x)ᵀ, dL/dW = r xᵀ; None where not tracked."""
    W, A, B = torch.tensor(P["W0"]), torch.tensor(P["A0"]), torch.tensor(P["B0"])
    x, t, s = torch.tensor(P["xs"]), torch.tensor(P["ts"]), P["scale"]
    r = 2 * (W @ x + s * B @ (A @ x) - t)
    return {"A.grad": s * torch.outer(B.T @ r, x) if a else None,
            "B.grad": s * torch.outer(r, A @ x) if b else None,
            "W.grad": torch.outer(r, x) if w else None}


W_FROZEN = "W = torch.tensor(W0)\n"
A_LINE = "A = torch.tensor(A0, requires_grad=True)\n"
B_LINE = "B = torch.tensor(B0, requires_grad=True)\n"
DATA = "x = torch.tensor(xs)\nt = torch.tensor(ts)\n"
Y = "y = W @ x + scale * (B @ (A @ x))\n"
END = "L = ((y - t) ** 2).sum()\nL.backward()\n"

cases = [
    right("fix", W_FROZEN + A_LINE + B_LINE + DATA + Y + END),
    right("fix", "W = torch.tensor(W0, requires_grad=True)\nW.requires_grad_(False)\n" + A_LINE + B_LINE + DATA
          + "y = (W + scale * B @ A) @ x\n" + END),
    right("fix", "W = torch.tensor(W0, requires_grad=True).detach()\n" + A_LINE + B_LINE + DATA + Y + END),
    wrong("fix", "W = torch.tensor(W0, requires_grad=True)\n" + A_LINE + B_LINE + DATA + Y + END,
          at="W = torch.tensor(W0, requires_grad=True)", kind="untracked_leaf",
          mistake="B made trainable but W left with requires_grad=True: the frozen base weight gets a gradient",
          expect=lambda P: by_hand(P, w=True)),
    wrong("fix", W_FROZEN + A_LINE + "B = torch.tensor(B0)\n" + DATA + Y + END,
          at="B = torch.tensor(B0)", kind="untracked_leaf",
          mistake="W frozen but B left untracked: B.grad stays None",
          expect=lambda P: by_hand(P, b=False)),
    wrong("fix", W_FROZEN + A_LINE + B_LINE + DATA + "with torch.no_grad():\n    delta = scale * (B @ A)\n"
          "y = (W + delta) @ x\n" + END,
          at="with torch.no_grad():", kind="code_error",
          mistake="the adapter's update computed under no_grad (as for the frozen part): the loss has no graph",
          expect=lambda P: RAISES),
    wrong("fix", W_FROZEN + A_LINE + B_LINE + DATA + "y = W @ x + scale * (B @ (A.detach() @ x))\n" + END,
          at="A.detach()", kind="untracked_leaf", accept=["missing_path"],
          mistake="A detached in the forward pass (freezing the wrong factor): A.grad stays None",
          expect=lambda P: by_hand(P, a=False)),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"A0": [[-0.5, 0.4, 1.0]], "B0": [[0.2], [1.1]], "xs": [0.3, 1.0, -1.5]}])
