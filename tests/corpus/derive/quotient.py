"""corpus-quotient: z = a / b at a = 2.5, b = 0.8."""

import torch
from corpus_cases import Cases, answer, as_tensor, at

a0, b0 = 2.5, 0.8
a = torch.tensor(a0, requires_grad=True)
b = torch.tensor(b0, requires_grad=True)
z = a / b
z.backward()
assert abs(float(a.grad) - 1 / b0) < 1e-6 and abs(float(b.grad) + a0 / b0**2) < 1e-5

c = Cases("corpus-quotient")
c.forward(a0 / b0)
c.correct("a.grad", a.grad, answer(a.grad), "1.25", "5/4", as_tensor(a.grad), "[1.25]")
c.mistake("a.grad", 1.0, "d(a/b)/da taken as 1 (the 1/b dropped)", "wrong_local_derivative", edge=["a", "div"])
c.mistake("a.grad", -1 / b0, "sign flipped on the only path", "sign_error", paths=[["a", "div", "z"]])
c.mistake("a.grad", a0 / b0, "gave z = a/b, the forward value", "forward_value")

c.correct("b.grad", b.grad, answer(b.grad), "-3.90625", "-125/32", as_tensor(b.grad))
c.mistake("b.grad", a0 / b0**2, "the quotient rule's minus sign lost: +a/b²", "wrong_local_derivative",
          edge=["b", "div"])
c.mistake("b.grad", 1 / b0, "d(a/b)/db taken as 1/b, like the numerator's", "wrong_local_derivative",
          edge=["b", "div"])
c.mistake("b.grad", -1 / b0**2, "d(a/b)/db taken as -1/b² (the factor a dropped)", "wrong_local_derivative",
          edge=["b", "div"])
c.mistake("b.grad", -a0 / b0**3, "power rule on b⁻¹ done as -b⁻³", "wrong_local_derivative", edge=["b", "div"])
c.mistake("b.grad", 5.3, "a guess: no derivation gives this number", "unknown")
# formula part: the same mistakes as formulas (checked at the seed point against the numbers above)
c.correct("dz_db", b.grad, "-a/b^2", "-a*b^(-2)", "-(a/(b*b))")
for formula, value, mistake in [
    ("a/b^2", a0 / b0**2, "the quotient rule's minus sign lost"),
    ("1/b", 1 / b0, "d(a/b)/db taken as 1/b, like the numerator's"),
    ("-1/b^2", -1 / b0**2, "the factor a dropped"),
]:
    assert abs(at(formula, a=a0, b=b0) - value) < 1e-9
    c.mistake("dz_db", value, mistake, "wrong_local_derivative", text=formula, edge=["b", "div"])
c.write()
