"""corpus-seed-vector: y = x**3, y.backward(v) with v = [1, 0.5, 2]."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([1.5, -0.5, 2.5])
v = torch.tensor([1.0, 0.5, 2.0])
x = xd.clone().requires_grad_(True)
y = x**3
y.backward(v)
assert torch.allclose(x.grad, 3 * xd**2 * v)

c = Cases("corpus-seed-vector")
c.forward(xd**3, xd**3 * v)
c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad), "[27/4, 3/8, 75/2]")
c.mistake("x.grad", 3 * xd**2, "the seed ignored (taken as ones)", "seed_vector")
c.mistake("x.grad", 3 * xd**2 * v * v, "the seed applied twice", "seed_vector")
c.mistake("x.grad", (3 * xd**2 * v).sum(), "gave vᵀJ summed into one number", "shape")
c.mistake("x.grad", 3 * xd * v, "d(x³)/dx taken as 3x", "wrong_local_derivative", edge=["x", "pow"])
c.mistake("x.grad", xd**3, "gave y = x³, the forward value", "forward_value")
c.write()
