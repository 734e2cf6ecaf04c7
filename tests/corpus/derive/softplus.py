"""corpus-softplus: L = (softplus(x)**2).sum()."""

import torch
import torch.nn.functional as F
from corpus_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([-0.5, 1.5, 0.75])
x = xd.clone().requires_grad_(True)
L = (F.softplus(x) ** 2).sum()
L.backward()
sp = torch.log(1 + torch.exp(xd))
sig = torch.sigmoid(xd)
assert torch.allclose(x.grad, 2 * sp * sig)

c = Cases("corpus-softplus")
c.forward(sp, sp**2)
c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad))
c.mistake("x.grad", 2 * sp * torch.exp(xd), "softplus′ taken as exp(x), without the normaliser 1 + eˣ",
          "wrong_local_derivative", edge=["x", "softplus"])
c.mistake("x.grad", 2 * sp * torch.sigmoid(-xd), "softplus′ taken as σ(-x) = 1/(1 + eˣ)",
          "wrong_local_derivative", edge=["x", "softplus"])
c.mistake("x.grad", 2 * sp, "softplus′ taken as 1 (chain rule forgotten at softplus)",
          "wrong_local_derivative", edge=["x", "softplus"])
c.mistake("x.grad", sp * sig, "d(s²)/ds taken as s: the 2 dropped", "wrong_local_derivative",
          edge=["softplus", "pow"])
c.mistake("x.grad", (2 * sp * sig).sum(), "summed the gradient into one number", "shape")
c.write()
