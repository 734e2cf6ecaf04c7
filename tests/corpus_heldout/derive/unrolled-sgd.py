"""heldout-unrolled-sgd: w ← w - lr·2a(wa - t) twice (in place), L = (wa - t)²; dL/dw0."""

import torch
from heldout_cases import Cases, answer, as_tensor, at, paths_from, rounded

w_start, a, t, lrs = 0.5, 2.0, 1.5, [0.05, 0.025]
w0 = torch.tensor(w_start, requires_grad=True)
c = Cases("heldout-unrolled-sgd")
w = w0.clone()
gs = []
for lr in lrs:
    g = 2 * a * (w * a - t)
    gs.append(g)
    w -= lr * g
L = (w * a - t) ** 2
c.graph(L)
leaves = {"w0": w0}
g1, g2 = gs
every = paths_from(L, leaves, "L", "w0")
via_g1_only = paths_from(L, leaves, "L", "w0", through=[g1], avoiding=[g2])
via_g2_only = paths_from(L, leaves, "L", "w0", through=[g2], avoiding=[g1])
via_g2 = paths_from(L, leaves, "L", "w0", through=[g2])
via_g1 = paths_from(L, leaves, "L", "w0", through=[g1])
via_any = [p for p in every if p in via_g1 or p in via_g2]
assert len(every) == 4 and len(via_g1_only) == len(via_g2_only) == 1 and len(via_any) == 3
L.backward()

# by hand: dw_{k+1}/dw_k = 1 - lr_k·2a²; the final loss's derivative 2a(w₂a - t)
shrink = [1 - lr * 2 * a * a for lr in lrs]
ws = [w_start]
for lr in lrs:
    ws.append(ws[-1] - lr * 2 * a * (ws[-1] * a - t))
final = 2 * a * (ws[-1] * a - t)
assert abs(float(w0.grad) - final * shrink[0] * shrink[1]) < 1e-6
c.forward(*ws, *(2 * a * (v * a - t) for v in ws[:-1]), ws[-1] * a - t)

c.correct("w0.grad", w0.grad, answer(w0.grad), as_tensor(w0.grad), rounded(w0.grad), "-0.4608")
c.mistake("w0.grad", final, "each step's g treated as a constant: dw_{k+1}/dw_k taken as 1", "missing_path",
          paths=via_any)
c.mistake("w0.grad", final * shrink[0], "the last step's g treated as a constant", "missing_path", paths=via_g2)
c.mistake("w0.grad", final * shrink[1], "the first step's g treated as a constant", "missing_path", paths=via_g1)
# d(w - u)/du taken as +1 at both updates (one belief, two edges, as with the learning rate below); in
# path terms the paths through exactly one g flip sign, the one through both keeps it: also accepted
c.mistake("w0.grad", final * (2 - shrink[0]) * (2 - shrink[1]),
          "the update's minus sign lost: dw_{k+1}/dw_k taken as 1 + lr·2a²", "two_mistakes",
          components=[{"kind": "wrong_local_derivative", "edge": ["mul", "sub"]},
                      {"kind": "wrong_local_derivative", "edge": ["mul", "sub"]}],
          accept=["sign_error"], paths=via_g1_only + via_g2_only)
c.mistake("w0.grad", final * (1 - 2 * a * a) ** 2, "the learning rate forgotten in both steps' derivative",
          "two_mistakes", components=[{"kind": "wrong_local_derivative", "edge": ["mul", "mul"]},
                                      {"kind": "wrong_local_derivative", "edge": ["mul", "mul"]}])
c.mistake("w0.grad", final / 2 * shrink[0] * shrink[1], "d(e²)/de taken as e in the final loss: the 2 dropped",
          "wrong_local_derivative", edge=["sub", "pow"])

c.correct_formula("dL_dw0", w0.grad, {"w": w_start}, "1.92*(0.96*w - 0.72)", "1.8432*w - 1.3824")
for formula, value, mistake, kind, where in [
    ("4*(0.96*w - 0.72)", final, "each step's g treated as a constant", "missing_path", {"paths": via_any}),
    ("2.4*(0.96*w - 0.72)", final * shrink[0], "the last step's g treated as a constant", "missing_path",
     {"paths": via_g2}),
    ("0.96*(0.96*w - 0.72)", final / 2 * shrink[0] * shrink[1], "the final square's 2 dropped",
     "wrong_local_derivative", {"edge": ["sub", "pow"]}),
]:
    assert abs(at(formula, w=w_start) - value) < 1e-9, formula
    c.mistake("dL_dw0", value, mistake, kind, text=formula, **where)
c.write()
