"""corpus-two-backward-calls: y = x**3; y.backward(); z = 4x; z.backward() at x = 1.5."""

import torch
from corpus_cases import Cases, answer, as_tensor

x0 = 1.5
x = torch.tensor(x0, requires_grad=True)
y = x**3
y.backward()
z = 4 * x
z.backward()
first, second = 3 * x0**2, 4.0
assert abs(float(x.grad) - (first + second)) < 1e-5

c = Cases("corpus-two-backward-calls")
c.forward(x0**3, 4 * x0)
c.correct("x.grad", x.grad, answer(x.grad), "10.75", "43/4", as_tensor(x.grad), "[10.75]")
# The two calls differentiate two graphs: dropping a call is also dropping that graph's path.
c.mistake("x.grad", first, "only the first call counted (also: the second loss's path missing)", "accumulation",
          accept=["missing_path"], paths=[["x", "mul", "z"]])
c.mistake("x.grad", second, "the second call overwrites .grad (also: the first loss's path missing)", "accumulation",
          accept=["missing_path"], paths=[["x", "pow", "y"]])
c.mistake("x.grad", (first + second) / 2, "the two calls averaged", "accumulation")
c.mistake("x.grad", 2 * (first + second), "believed each call doubles .grad: the total counted twice", "accumulation")
c.mistake("x.grad", 3 * x0 + second, "d(x³)/dx taken as 3x", "wrong_local_derivative", edge=["x", "pow"])
c.write()
