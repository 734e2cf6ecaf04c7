"""heldout-nll-by-hand: logp = Z - log Σ exp Z, L = -mean(logp[i, yᵢ])."""

import torch
from heldout_cases import Cases, answer, as_tensor, paths_from, rounded

Zd = torch.tensor([[1.0, -0.5, 2.0], [0.5, 1.5, -1.0]])
ys = [2, 0]
Z = Zd.clone().requires_grad_(True)
c = Cases("heldout-nll-by-hand")
norm = torch.log(torch.exp(Z).sum(dim=1, keepdim=True))
logp = Z - norm
L = -logp[torch.arange(2), torch.tensor(ys)].mean()
c.graph(L)
leaves = {"Z": Z}
via_norm = paths_from(L, leaves, "L", "Z", through=[norm])
direct = paths_from(L, leaves, "L", "Z", avoiding=[norm])
assert len(via_norm) == len(direct) == 1
L.backward()

p = torch.softmax(Zd, dim=1)
onehot = torch.zeros(2, 3)
onehot[torch.arange(2), torch.tensor(ys)] = 1
n = 2
assert torch.allclose(Z.grad, (p - onehot) / n, atol=1e-6)
c.forward(p, torch.log(p), torch.exp(Zd))

c.correct("Z.grad", Z.grad, answer(Z.grad), as_tensor(Z.grad), rounded(Z.grad))
c.mistake("Z.grad", -onehot / n, "the normaliser log Σ exp treated as a constant", "missing_path", paths=via_norm)
c.mistake("Z.grad", p / n, "only the normaliser's gradient: the -1 at each target forgotten", "missing_path",
          paths=direct)
c.mistake("Z.grad", p - onehot, "the batch mean's 1/N forgotten", "wrong_local_derivative", edge=["index", "mean"])
c.mistake("Z.grad", (torch.exp(Zd) - onehot) / n, "d log s/ds taken as 1: exp(z) used without dividing by the sum",
          "wrong_local_derivative", edge=["sum", "log"])
c.mistake("Z.grad", (onehot - p) / n, "sign flipped: the gradient of +mean log p", "sign_error",
          paths=via_norm + direct)
c.mistake("Z.grad", (p - onehot)[torch.arange(2), torch.tensor(ys)] / n,
          "gave one number per example (the target entries) for the 2×3 logits", "shape")
c.write()
