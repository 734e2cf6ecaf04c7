"""corpus-cat-index: q = cat([a[:2], b]), L = (q * k).sum() + a[2]**2."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

ad = torch.tensor([1.5, -0.5, 2.5])
bd = torch.tensor([0.5, -1.25])
k = torch.tensor([1.5, -0.5, 3.0, 0.75])
a, b = ad.clone().requires_grad_(True), bd.clone().requires_grad_(True)
q = torch.cat([a[:2], b])
L = (q * k).sum() + a[2] ** 2
L.backward()
right_a = torch.tensor([k[0], k[1], 2 * ad[2]])
assert torch.allclose(a.grad, right_a) and torch.allclose(b.grad, k[2:])
select_path = ["a", "select", "pow", "add", "L"]

c = Cases("corpus-cat-index")
c.forward(torch.cat([ad[:2], bd]), torch.cat([ad[:2], bd]) * k, ad[2] ** 2, k)
c.correct("a.grad", a.grad, answer(a.grad), bare(a.grad), as_tensor(a.grad))
c.mistake("a.grad", torch.tensor([k[0], k[1], 0.0]), "the a[2]**2 term forgotten", "missing_path",
          paths=[select_path])
c.mistake("a.grad", torch.tensor([k[0], k[1], ad[2]]), "d(a₂²)/da₂ taken as a₂", "wrong_local_derivative",
          edge=["select", "pow"])
c.mistake("a.grad", k[:2], "gave the gradient of the slice a[:2] only (2 entries, a has 3)", "shape")
c.mistake("a.grad", torch.tensor([k[0], k[1], -2 * ad[2]]), "sign of the a[2]**2 term flipped", "sign_error",
          paths=[select_path])

c.correct("b.grad", b.grad, answer(b.grad), bare(b.grad), as_tensor(b.grad))
c.mistake("b.grad", k[:2], "the cat's gradient split at the wrong offset: b took the first two entries",
          "wrong_local_derivative", edge=["b", "cat"])
c.mistake("b.grad", torch.tensor([k[3], k[2]]), "the cat's gradient handed back in reverse order",
          "wrong_local_derivative", edge=["b", "cat"])
c.write()
