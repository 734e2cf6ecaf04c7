"""corpus-logsumexp-xent: L = logsumexp(z) - z[1]."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

zd = torch.tensor([0.5, 1.25, -0.75])
z = zd.clone().requires_grad_(True)
L = torch.logsumexp(z, 0) - z[1]
L.backward()
softmax = torch.exp(zd) / torch.exp(zd).sum()
onehot = torch.tensor([0.0, 1.0, 0.0])
assert torch.allclose(z.grad, softmax - onehot)
lse_path = ["z", "logsumexp", "sub", "L"]
select_path = ["z", "select", "sub", "L"]

c = Cases("corpus-logsumexp-xent")
c.correct("z.grad", z.grad, answer(z.grad), bare(z.grad), as_tensor(z.grad))
c.mistake("z.grad", torch.exp(zd) - onehot, "logsumexp′ taken as exp(z), without the normaliser Σ exp",
          "wrong_local_derivative", edge=["z", "logsumexp"])
c.mistake("z.grad", torch.ones(3) - onehot, "logsumexp′ taken as 1 (like a sum)",
          "wrong_local_derivative", edge=["z", "logsumexp"])
c.mistake("z.grad", softmax, "forgot the - z[1] term: only the softmax", "missing_path", paths=[select_path])
c.mistake("z.grad", -onehot, "forgot the log-sum-exp term: only -onehot", "missing_path", paths=[lse_path])
c.mistake("z.grad", softmax + onehot, "the minus sign of - z[1] lost", "sign_error", paths=[select_path])
c.mistake("z.grad", onehot - softmax, "gradient of -L: both terms' signs flipped", "sign_error",
          paths=[lse_path, select_path])
c.write()
