"""code-label-smoothing: programs for smoothed cross-entropy."""

import torch
from code_cases import RAISES, right, verify, wrong

SLUG = "code-label-smoothing"


def by_hand(P, scale=1.0):
    """dL/dZ = (softmax(Z) - q) / B, times the factor the mistake leaves."""
    Z = torch.tensor(P["Z0"])
    B, K = Z.shape
    q = torch.full((B, K), P["smooth"] / K)
    q[range(B), P["targets"]] += 1 - P["smooth"]
    return {"z.grad": scale * (torch.softmax(Z, dim=1) - q) / B}


START = "z = torch.tensor(Z0, requires_grad=True)\nt = torch.tensor(targets)\nK = z.shape[1]\n"
Q = "q = (1 - smooth) * torch.nn.functional.one_hot(t, K) + smooth / K\n"

cases = [
    right("smoothed", START + Q + "L = -(q * torch.log_softmax(z, dim=1)).sum(dim=1).mean()\nL.backward()\n"),
    right("smoothed", "import torch.nn.functional as F\n\nz = torch.tensor(Z0, requires_grad=True)\n"
          "t = torch.tensor(targets)\nL = F.cross_entropy(z, t, label_smoothing=smooth)\nL.backward()\n"),
    right("smoothed", START + Q + "p = torch.softmax(z, dim=1)\n"
          "L = -(q * torch.log(p)).sum() / z.shape[0]\nL.backward()\n"),
    wrong("smoothed", START + Q + "L = -(q * torch.log_softmax(z, dim=1)).sum(dim=1).sum()\nL.backward()\n",
          at=".sum(dim=1).sum()", kind="wrong_local_derivative", edge=["sum", "mean"],
          mistake="the batch summed instead of averaged: the mean's 1/B forgotten",
          expect=lambda P: by_hand(P, scale=len(P["Z0"]))),
    wrong("smoothed", START + Q + "L = -(q * torch.log_softmax(z, dim=1)).mean()\nL.backward()\n",
          at=").mean()", kind="wrong_local_derivative", edge=["mul", "sum"],
          mistake="one mean over classes and examples: the sum over classes read as a mean (divided by K too)",
          expect=lambda P: by_hand(P, scale=1 / len(P["Z0"][0]))),
    wrong("smoothed", START + Q + "L = (q * torch.log_softmax(z, dim=1)).sum(dim=1).mean()\nL.backward()\n",
          at="L = (q * torch.log_softmax", kind="sign_error",
          mistake="the minus of the negative log-likelihood dropped",
          expect=lambda P: by_hand(P, scale=-1.0)),
    wrong("smoothed", START + Q + "L = -(q * torch.log_softmax(z.detach(), dim=1)).sum(dim=1).mean()\nL.backward()\n",
          at="z.detach()", kind="code_error",
          mistake="the logits detached before the log-softmax: the loss has no graph and backward fails",
          expect=lambda P: RAISES),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"Z0": [[-0.4, 1.5, 0.2], [2.0, -1.0, 0.5]]}])
