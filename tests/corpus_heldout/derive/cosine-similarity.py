"""heldout-cosine-similarity: L = a·b / (‖a‖ ‖b‖)."""

import torch
from heldout_cases import Cases, answer, as_tensor, bare, paths_from

ad = torch.tensor([1.0, -0.5, 2.0])
bd = torch.tensor([0.5, 1.5, -1.0])
a, b = ad.clone().requires_grad_(True), bd.clone().requires_grad_(True)
c = Cases("heldout-cosine-similarity")
na, nb = a.norm(), b.norm()
L = (a * b).sum() / (na * nb)
c.graph(L)
leaves = {"a": a, "b": b}
a_norm, a_dot = paths_from(L, leaves, "L", "a", through=[na]), paths_from(L, leaves, "L", "a", avoiding=[na])
b_norm = paths_from(L, leaves, "L", "b", through=[nb])
assert len(a_norm) == len(a_dot) == len(b_norm) == 1
L.backward()

NA, NB, dot = float(ad.norm()), float(bd.norm()), float(ad @ bd)
D = NA * NB
cos = dot / D
by_dot_a, dL_dna = bd / D, -dot / D**2 * NB   # dL/d‖a‖ = -(a·b)/D² · ‖b‖
by_norm_a = dL_dna * ad / NA
assert torch.allclose(a.grad, by_dot_a + by_norm_a, atol=1e-6)
assert torch.allclose(b.grad, ad / D - cos * bd / NB**2, atol=1e-6)
c.forward(ad * bd, NA, NB, D, cos)

c.correct("a.grad", a.grad, answer(a.grad), bare(a.grad), as_tensor(a.grad))
c.mistake("a.grad", by_dot_a, "the norms treated as constants", "missing_path", paths=a_norm)
c.mistake("a.grad", by_dot_a + dL_dna * ad, "d‖a‖/da taken as a (the division by ‖a‖ forgotten)",
          "wrong_local_derivative", edge=["a", "linalg_vector_norm"])
c.mistake("a.grad", by_dot_a + dL_dna * 2 * ad, "d‖a‖/da taken as 2a, the derivative of ‖a‖²",
          "wrong_local_derivative", edge=["a", "linalg_vector_norm"])
c.mistake("a.grad", by_dot_a - by_norm_a, "the quotient rule's minus sign lost", "sign_error", paths=a_norm,
          accept=["wrong_local_derivative"], edge=["mul", "div"])
c.mistake("a.grad", by_dot_a + by_norm_a / NB, "d(‖a‖‖b‖)/d‖a‖ taken as 1: the ‖b‖ dropped",
          "wrong_local_derivative", edge=["linalg_vector_norm", "mul"])

c.correct("b.grad", b.grad, answer(b.grad), bare(b.grad), as_tensor(b.grad))
c.mistake("b.grad", ad / D, "the norms treated as constants", "missing_path", paths=b_norm)
c.mistake("b.grad", bd / D - cos * bd / NB**2, "d(a·b)/db taken as b: the wrong operand", "wrong_local_derivative",
          edge=["b", "mul"])
c.write()
