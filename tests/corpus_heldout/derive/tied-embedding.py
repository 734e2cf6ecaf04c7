"""heldout-tied-embedding: h = E[1], L = -log_softmax(E h)[2]; E is used twice."""

import torch
from heldout_cases import Cases, answer, as_tensor, paths_from, rounded

Ed = torch.tensor([[0.5, -1.0, 0.25], [1.0, 0.5, -0.5], [-0.25, 1.5, 1.0], [0.0, -0.5, 2.0]])
E = Ed.clone().requires_grad_(True)
c = Cases("heldout-tied-embedding")
h = E[1]
logits = E @ h
L = -torch.log_softmax(logits, dim=0)[2]
c.graph(L)
leaves = {"E": E}
as_input = paths_from(L, leaves, "L", "E", through=[h])
as_output = paths_from(L, leaves, "L", "E", avoiding=[h])
assert len(as_input) == len(as_output) == 1
L.backward()

hd = Ed[1]
p = torch.softmax(Ed @ hd, dim=0)
target = torch.tensor([0.0, 0.0, 1.0, 0.0])
row = torch.tensor([0.0, 1.0, 0.0, 0.0])


def e_grad(g: torch.Tensor, output_use: bool = True, input_use: bool = True) -> torch.Tensor:
    """dL/dE from the gradient g of the logits: g hᵀ (output layer) + e₁ (Eᵀ g)ᵀ (the looked-up row)."""
    out = torch.zeros(4, 3)
    if output_use:
        out = out + torch.outer(g, hd)
    if input_use:
        out = out + torch.outer(row, Ed.T @ g)
    return out


assert torch.allclose(E.grad, e_grad(p - target), atol=1e-6)
c.forward(p, torch.log(p))

c.correct("E.grad", E.grad, answer(E.grad), as_tensor(E.grad), rounded(E.grad))
c.mistake("E.grad", e_grad(p - target, input_use=False), "the input lookup E[1] forgotten: only the output layer",
          "missing_path", paths=as_input)
c.mistake("E.grad", e_grad(p - target, output_use=False), "only the looked-up row: the tied output layer forgotten",
          "missing_path", paths=as_output)
c.mistake("E.grad", e_grad(-target), "log_softmax′ taken as 1: the softmax's normaliser forgotten",
          "wrong_local_derivative", edge=["mv", "log_softmax"])
c.mistake("E.grad", e_grad(p), "the -1 at the target word forgotten: d(-log softmax)/dz taken as softmax(z)",
          "wrong_local_derivative", edge=["mv", "log_softmax"])
c.mistake("E.grad", e_grad(target - p), "sign flipped: the gradient of +log p", "sign_error",
          paths=as_input + as_output)
c.mistake("E.grad", e_grad(p - target).T, "gave the 3×4 transpose of the gradient", "shape")
c.write()
