"""corpus-partly-untracked: u untracked, v tracked, z = (u*v).sum() + (v**2).sum()."""

import torch
from corpus_cases import Cases, answer, as_tensor, bare

ud = torch.tensor([1.5, -0.5, 2.25])
vd = torch.tensor([0.25, 1.5, -0.75])
u = ud.clone()
v = vd.clone().requires_grad_(True)
z = (u * v).sum() + (v**2).sum()
z.backward()
assert u.grad is None and torch.allclose(v.grad, ud + 2 * vd)

c = Cases("corpus-partly-untracked")
c.forward(ud, vd, ud * vd, vd**2)
c.correct("v.grad", v.grad, answer(v.grad), bare(v.grad), as_tensor(v.grad))
c.mistake("v.grad", None, "believed no gradient exists for v either", "untracked_leaf", text="None")
c.mistake("v.grad", 2 * vd, "the u·v term forgotten", "missing_path", paths=[["v", "mul", "sum", "add", "z"]])
c.mistake("v.grad", ud + vd, "d(v²)/dv taken as v", "wrong_local_derivative", edge=["v", "pow"])
c.mistake("v.grad", -ud + 2 * vd, "sign of the u·v path flipped", "sign_error", paths=[["v", "mul", "sum", "add", "z"]])

c.values["u.grad"] = None
c.right.append({"part": "u.grad", "answer": "None"})
c.right.append({"part": "u.grad", "answer": "none"})
c.mistake("u.grad", vd, "gave ∂z/∂u = v, but u is not tracked: u.grad is None", "untracked_leaf")
c.mistake("u.grad", torch.zeros(3), "gave zeros: an untracked tensor has no .grad at all", "untracked_leaf")
c.write()
