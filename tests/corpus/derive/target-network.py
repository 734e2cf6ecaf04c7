"""corpus-target-network: L = (w x - (r + γ (w x').detach()))²."""

import math

import torch
from corpus_cases import Cases, answer, as_tensor

w0, x0, x1, r, gamma = 0.8, 1.5, -0.5, 0.25, 0.9
w = torch.tensor(w0, requires_grad=True)
q = w * x0
target = r + gamma * (w * x1).detach()
L = (q - target) ** 2
L.backward()
d = w0 * x0 - (r + gamma * w0 * x1)
assert math.isclose(float(w.grad), 2 * d * x0, rel_tol=1e-5)
main = ["w", "mul", "sub", "pow", "L"]
through_target = ["w", "mul", "detach", "mul", "add", "sub", "pow", "L"]

c = Cases("corpus-target-network")
c.forward(w0 * x0, w0 * x1, gamma * w0 * x1, r + gamma * w0 * x1, d, d * d)
c.correct("w.grad", w.grad, answer(w.grad), as_tensor(w.grad), f"{float(w.grad):.4f}")
c.mistake("w.grad", 2 * d * (x0 - gamma * x1), "differentiated through the target: detach() ignored",
          "extra_path", paths=[through_target])
c.mistake("w.grad", d * x0, "d(e²)/de taken as e: the 2 dropped", "wrong_local_derivative", edge=["sub", "pow"])
c.mistake("w.grad", 2 * d, "d(w·x)/dw taken as 1: the x factor dropped", "wrong_local_derivative", edge=["w", "mul"])
c.mistake("w.grad", -2 * d * x0, "sign flipped: wrote (target - q)", "sign_error", paths=[main])
c.mistake("w.grad", d * (x0 - gamma * x1), "two mistakes: through the detached target, and the 2 of the square dropped",
          "two_mistakes", components=[{"kind": "extra_path", "paths": [through_target]},
                                      {"kind": "wrong_local_derivative", "edge": ["sub", "pow"]}])
c.write()
