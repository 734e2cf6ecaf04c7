"""code-vae-reparam: programs for the reparameterisation trick."""

import torch
from code_cases import right, verify, wrong

SLUG = "code-vae-reparam"


def by_hand(P, rec_mu=1.0, rec_logvar=1.0, kl=1.0):
    """dL/dμ = 2(z - t) + μ; dL/dℓ = 2(z - t)·ε·e^{ℓ/2}/2 + (e^ℓ - 1)/2; each term scaled as the
    student's mistake leaves it (0: the path cut; -1: its sign flipped)."""
    mu, lv = torch.tensor(P["mu0"]), torch.tensor(P["logvar0"])
    eps, t = torch.tensor(P["eps0"]), torch.tensor(P["t0"])
    std = torch.exp(lv / 2)
    r = 2 * (mu + std * eps - t)
    return {"mu.grad": rec_mu * r + kl * mu,
            "logvar.grad": rec_logvar * r * eps * std / 2 + kl * (torch.exp(lv) - 1) / 2}


START = ("mu = torch.tensor(mu0, requires_grad=True)\nlogvar = torch.tensor(logvar0, requires_grad=True)\n"
         "eps = torch.tensor(eps0)\ntarget = torch.tensor(t0)\n")
STD = "std = torch.exp(0.5 * logvar)\n"
Z = "z = mu + std * eps\n"
REC = "rec = ((z - target) ** 2).sum()\n"
KL = "kl = -0.5 * torch.sum(1 + logvar - mu ** 2 - torch.exp(logvar))\n"
END = "L = rec + kl\nL.backward()\n"

cases = [
    right("reparam", START + STD + Z + REC + KL + END),
    right("reparam", START + "z = mu + torch.sqrt(logvar.exp()) * eps\n" + REC
          + "kl = 0.5 * (mu.pow(2) + logvar.exp() - 1 - logvar).sum()\n" + END),
    wrong("reparam", START + "std = torch.exp(0.5 * logvar).detach()\n" + Z + REC + KL + END,
          at=".detach()", kind="missing_path",
          mistake="the standard deviation detached: the sample's path to logvar is cut, only the KL reaches it",
          expect=lambda P: by_hand(P, rec_logvar=0.0)),
    wrong("reparam", START + STD + "z = mu.data + std * eps\n" + REC + KL + END,
          at="mu.data", kind="missing_path",
          mistake="mu taken through .data in the sample: only the KL term reaches mu",
          expect=lambda P: by_hand(P, rec_mu=0.0)),
    wrong("reparam", START + STD + Z + REC + "kl = 0.5 * torch.sum(1 + logvar - mu ** 2 - torch.exp(logvar))\n" + END,
          at="kl = 0.5", kind="sign_error",
          mistake="the KL's leading minus dropped: the KL term's gradient has the wrong sign",
          expect=lambda P: by_hand(P, kl=-1.0)),
    wrong("reparam", START + STD + "z = (mu + std * eps).detach()\n" + REC + KL + END,
          at="z = (mu + std * eps).detach()", kind="missing_path",
          mistake="the sample detached (as if sampling could not be differentiated): only the KL remains",
          expect=lambda P: by_hand(P, rec_mu=0.0, rec_logvar=0.0)),
    wrong("reparam", START + STD + Z + REC + KL + "L = rec + kl.item()\nL.backward()\n",
          at="kl.item()", kind="missing_path",
          mistake="the KL added as a Python number: its gradient is lost",
          expect=lambda P: by_hand(P, kl=0.0)),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"mu0": [-0.3, 0.8], "logvar0": [-1.0, 0.4], "eps0": [-0.7, 1.5]}])
