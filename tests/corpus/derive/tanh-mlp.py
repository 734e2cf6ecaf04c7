"""corpus-tanh-mlp: h = tanh(W1 @ x + b1), y = w2 @ h + b2, L = (y - t)**2."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

x = torch.tensor([1.5, -0.5])
W1 = torch.tensor([[0.5, -0.25], [-0.75, 0.4]], requires_grad=True)
b1 = torch.tensor([0.1, -0.2], requires_grad=True)
w2 = torch.tensor([1.25, -0.6], requires_grad=True)
b2 = torch.tensor(0.3, requires_grad=True)
t = 0.5
a = W1 @ x + b1
h = torch.tanh(a)
y = w2 @ h + b2
L = (y - t) ** 2
L.backward()
a, h, y, w2d = a.detach(), h.detach(), y.detach(), w2.detach()
gy = 2 * (y - t)
tanh_slope = 1 - h**2
assert torch.allclose(w2.grad, gy * h)
assert torch.allclose(b1.grad, gy * w2d * tanh_slope)
assert torch.allclose(W1.grad, torch.outer(gy * w2d * tanh_slope, x))
path_w2 = ["w2", "dot", "add", "sub", "pow", "L"]
path_b1 = ["b1", "add", "tanh", "dot", "add", "sub", "pow", "L"]

c = Cases("corpus-tanh-mlp")
c.graph(L)
c.correct("w2.grad", w2.grad, answer(w2.grad), bare(w2.grad), as_tensor(w2.grad))
c.mistake("w2.grad", (y - t) * h, "d((y-t)²) taken as (y - t): the 2 dropped",
          "wrong_local_derivative", edge=["sub", "pow"])

d = gy * w2d
c.correct("b1.grad", b1.grad, answer(b1.grad), bare(b1.grad), as_tensor(b1.grad))
c.mistake("b1.grad", d * (1 + h**2), "tanh′ taken as 1 + tanh²", "wrong_local_derivative", edge=["add", "tanh"])
c.mistake("b1.grad", d * h, "tanh′ taken as tanh", "wrong_local_derivative", edge=["add", "tanh"])
c.mistake("b1.grad", d, "tanh′ taken as 1 (chain rule forgotten at tanh)", "wrong_local_derivative",
          edge=["add", "tanh"])
c.mistake("b1.grad", gy * tanh_slope, "d(w2·h)/dh taken as 1: the w2 factor dropped",
          "wrong_local_derivative", edge=["tanh", "dot"])
c.mistake("b1.grad", (y - t) * w2d * tanh_slope, "d((y-t)²) taken as (y - t): the 2 dropped",
          "wrong_local_derivative", edge=["sub", "pow"])
c.mistake("b1.grad", -d * tanh_slope, "sign flipped on the only path", "sign_error", paths=[path_b1])

delta = d * tanh_slope
c.correct("W1.grad", W1.grad, answer(W1.grad), as_tensor(W1.grad))
c.mistake("W1.grad", torch.outer(x, delta), "outer product transposed: x δᵀ instead of δ xᵀ",
          "wrong_local_derivative", edge=["W1", "mv"])
c.mistake("W1.grad", torch.outer(delta, torch.ones(2)), "d(W1 x)/dW1 taken as 1: the x factor dropped",
          "wrong_local_derivative", edge=["W1", "mv"])
c.mistake("W1.grad", torch.outer(d * (1 + h**2), x), "tanh′ taken as 1 + tanh²",
          "wrong_local_derivative", edge=["add", "tanh"])
c.write()
