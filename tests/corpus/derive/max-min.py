"""corpus-max-min: L = 3 * x.max() - x.min()."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

xd = torch.tensor([0.5, -1.5, 2.5, 1.25])
x = xd.clone().requires_grad_(True)
L = 3 * x.max() - x.min()
L.backward()
at_max = torch.tensor([0.0, 0.0, 1.0, 0.0])
at_min = torch.tensor([0.0, 1.0, 0.0, 0.0])
assert torch.allclose(x.grad, 3 * at_max - at_min)
max_path = ["x", "max", "mul", "sub", "L"]
min_path = ["x", "min", "sub", "L"]

c = Cases("corpus-max-min")
c.forward(2.5, -1.5, 7.5, 9.0)
c.correct("x.grad", x.grad, answer(x.grad), bare(x.grad), as_tensor(x.grad), "[0.0, -1.0, 3.0, 0.0]", "[0,-1,3,0]")
c.mistake("x.grad", 3 * torch.ones(4) - at_min, "max′ taken as 1 for every element "
          "(the kink ignored in the backward pass; also max′s factor taken as 1)",
          "dead_branch", edge=["x", "max"], accept=["wrong_local_derivative"])
c.mistake("x.grad", 3 * torch.ones(4) / 4 - at_min, "max's gradient shared equally (like a mean)",
          "wrong_local_derivative", edge=["x", "max"])
c.mistake("x.grad", 3 * at_max, "the - x.min() term forgotten", "missing_path", paths=[min_path])
c.mistake("x.grad", 3 * at_max + at_min, "the minus sign of - x.min() lost", "sign_error", paths=[min_path])
c.mistake("x.grad", at_max - at_min, "d(3·m)/dm taken as 1: the 3 dropped", "wrong_local_derivative",
          edge=["max", "mul"])
c.mistake("x.grad", -3 * at_max - at_min, "sign of the max term flipped", "sign_error", paths=[max_path])
c.write()
