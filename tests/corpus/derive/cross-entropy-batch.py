"""corpus-cross-entropy-batch: F.cross_entropy over 2 examples, mean reduction."""

import torch
import torch.nn.functional as F
from corpus_cases import Cases, answer, as_tensor

Zd = torch.tensor([[0.5, -1.25, 1.5], [0.75, 0.25, -0.5]])
Z = Zd.clone().requires_grad_(True)
L = F.cross_entropy(Z, torch.tensor([2, 0]))
L.backward()
softmax = torch.exp(Zd) / torch.exp(Zd).sum(1, keepdim=True)
onehot = torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
n = 2
assert torch.allclose(Z.grad, (softmax - onehot) / n)

c = Cases("corpus-cross-entropy-batch")
c.correct("Z.grad", Z.grad, answer(Z.grad), as_tensor(Z.grad))
c.mistake("Z.grad", softmax - onehot, "the 1/N of the mean reduction forgotten (summed over the batch)",
          "wrong_local_derivative", edge=["log_softmax", "nll_loss"])
c.mistake("Z.grad", (softmax - onehot) / 6, "divided by every element (6) instead of the batch size (2)",
          "wrong_local_derivative", edge=["log_softmax", "nll_loss"])
c.mistake("Z.grad", (torch.exp(Zd) - onehot) / n, "log_softmax′ with exp(z) in place of the softmax (no normaliser)",
          "wrong_local_derivative", edge=["Z", "log_softmax"])
c.mistake("Z.grad", -onehot / n, "log_softmax′ taken as 1 (the softmax term dropped)",
          "wrong_local_derivative", edge=["Z", "log_softmax"])
c.mistake("Z.grad", (onehot - softmax) / n, "sign flipped: onehot − softmax", "sign_error",
          paths=[["Z", "log_softmax", "nll_loss", "L"]])
c.write()
