"""corpus-softmax: p = softmax(z), L = (p * c).sum()."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

zd = torch.tensor([0.5, -1.25, 1.5])
cd = torch.tensor([1.5, -0.5, 2.5])
z = zd.clone().requires_grad_(True)
p = torch.softmax(z, 0)
L = (p * cd).sum()
L.backward()
pd = p.detach()
assert torch.allclose(z.grad, pd * (cd - (pd * cd).sum()))

c = Cases("corpus-softmax")
c.forward(pd, pd * cd, cd, (pd * cd).sum())
c.correct("z.grad", z.grad, answer(z.grad), bare(z.grad), as_tensor(z.grad))
c.mistake("z.grad", pd * (1 - pd) * cd, "softmax′ taken as its diagonal p(1 - p): the cross terms -pᵢpⱼ dropped",
          "wrong_local_derivative", edge=["z", "softmax"])
c.mistake("z.grad", torch.exp(zd) * cd, "softmax′ taken as exp(z), like an exponential without the normaliser",
          "wrong_local_derivative", edge=["z", "softmax"])
c.mistake("z.grad", -pd * (cd - (pd * cd).sum()), "sign flipped on the only path", "sign_error",
          paths=[["z", "softmax", "mul", "sum", "L"]])
c.mistake("z.grad", pd, "gave the softmax itself, the forward value", "forward_value")
c.write()
