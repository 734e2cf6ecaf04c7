"""heldout-gradient-reversal: f = w·x with a hook g ↦ -λ g on f, L = Σ f²."""

import torch
from heldout_cases import Cases, answer, as_tensor, bare, paths_from

xd = torch.tensor([1.5, -0.5, 2.0])
wd = torch.tensor([0.5, 1.0, -0.25])
lam = 0.5
w = wd.clone().requires_grad_(True)
c = Cases("heldout-gradient-reversal")
f = w * xd
f.register_hook(lambda g: -lam * g)
L = (f**2).sum()
c.graph(L)
only = paths_from(L, {"w": w}, "L", "w")
L.backward()

fd = wd * xd
reversed_ = -lam * 2 * fd  # the gradient at f after the hook
assert torch.allclose(w.grad, reversed_ * xd)
c.forward(fd, fd**2)

# Beliefs about the hook itself (ignored: 2 f x; only its sign: -2 f x) have no diagnosis kind:
# they are reported as feedback for the format, not listed as cases.
c.correct("w.grad", w.grad, answer(w.grad), bare(w.grad), as_tensor(w.grad))
c.mistake("w.grad", -lam * fd * xd, "d(f²)/df taken as f: the 2 dropped (the hook applied)",
          "wrong_local_derivative", edge=["mul", "pow"])
c.mistake("w.grad", reversed_, "d(w·x)/dw taken as 1: the x dropped (the hook applied)", "wrong_local_derivative",
          edge=["w", "mul"])
c.mistake("w.grad", -reversed_ * xd, "the reversal's minus sign lost (the scale λ kept)", "sign_error", paths=only)
c.mistake("w.grad", (reversed_ * xd).sum(), "summed the gradient into one number", "shape")
c.write()
