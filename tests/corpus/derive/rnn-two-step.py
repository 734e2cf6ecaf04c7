"""corpus-rnn-two-step: h1 = tanh(w h0 + u x1), L = tanh(w h1 + u x2)."""

import math

import torch
from corpus_cases import Cases, answer, as_tensor

w0, u0, h0, x1, x2 = 0.8, 1.5, 0.3, 0.5, -1.25
w = torch.tensor(w0, requires_grad=True)
u = torch.tensor(u0, requires_grad=True)
h1 = torch.tanh(w * h0 + u * x1)
L = torch.tanh(w * h1 + u * x2)
L.backward()

H1 = math.tanh(w0 * h0 + u0 * x1)
H2 = math.tanh(w0 * H1 + u0 * x2)
s1, s2 = 1 - H1**2, 1 - H2**2
# w: direct use at step 2 (factor h1), and through h1 (factor w at step 2, then h0 at step 1)
w_direct, w_through = s2 * H1, s2 * w0 * s1 * h0
u_direct, u_through = s2 * x2, s2 * w0 * s1 * x1
assert math.isclose(float(w.grad), w_direct + w_through, rel_tol=1e-5)
assert math.isclose(float(u.grad), u_direct + u_through, rel_tol=1e-5)
direct = {"w": ["w", "mul", "add", "tanh", "L"], "u": ["u", "mul", "add", "tanh", "L"]}
through = {k: [k, "mul", "add", "tanh", "mul", "add", "tanh", "L"] for k in "wu"}

c = Cases("corpus-rnn-two-step")
c.correct("w.grad", w.grad, answer(w.grad), as_tensor(w.grad), f"{float(w.grad):.5f}")
c.mistake("w.grad", w_direct, "h1 treated as a constant: only the last step's use of w", "missing_path",
          paths=[through["w"]])
c.mistake("w.grad", w_through, "only the gradient through h1; the direct use at step 2 forgotten", "missing_path",
          paths=[direct["w"]])
c.mistake("w.grad", s2 * H1 + s2 * s1 * h0, "the w of the second step dropped going back through h1",
          "wrong_local_derivative", edge=["tanh", "mul"])
c.mistake("w.grad", w_direct * w_through, "multiplied the two uses of w instead of adding them",
          "product_of_paths", paths=[direct["w"], through["w"]])
c.mistake("w.grad", w_direct - w_through, "sign of the path through h1 flipped", "sign_error",
          paths=[through["w"]])

c.correct("u.grad", u.grad, answer(u.grad), as_tensor(u.grad))
c.mistake("u.grad", u_direct, "h1 treated as a constant: only x2's step", "missing_path", paths=[through["u"]])
c.mistake("u.grad", u_direct + s2 * s1 * x1, "the w of the second step dropped going back through h1",
          "wrong_local_derivative", edge=["tanh", "mul"])
c.mistake("u.grad", x2 + w0 * x1, "both tanh′ taken as 1 (a linear RNN)", "two_mistakes",
          components=[{"kind": "wrong_local_derivative", "edge": ["add", "tanh"]},
                      {"kind": "wrong_local_derivative", "edge": ["add", "tanh"]}])
c.mistake("w.grad", 1.9, "a guess", "unknown")
c.write()
