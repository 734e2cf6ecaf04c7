"""code-sgd-loop: fixes of a hand-written SGD loop."""

import torch
from code_cases import RAISES, right, verify, wrong

SLUG = "code-sgd-loop"


def gradient(P, w):
    """dL/dw of mean((Xw - y)²), written out: (2/N) Xᵀ(Xw - y)."""
    X, y = torch.tensor(P["X0"]), torch.tensor(P["y0"])
    return 2 / len(y) * X.T @ (X @ w - y)


def descend(P, accumulate=False, zero_before_step=False):
    """The loop as the student believes it runs; returns w.grad after it."""
    w, acc = torch.tensor(P["w0"]), torch.zeros(2)
    for _ in range(P["steps"]):
        acc = acc + gradient(P, w) if accumulate else gradient(P, w)
        if zero_before_step:
            acc = torch.zeros(2)
        w = w - P["lr"] * acc
    return {"w.grad": acc}


START = """
X = torch.tensor(X0)
y = torch.tensor(y0)
w = torch.tensor(w0, requires_grad=True)
for step in range(steps):
"""
ZERO = "    if w.grad is not None:\n        w.grad.zero_()\n"
LOSS = "    L = ((X @ w - y) ** 2).mean()\n    L.backward()\n"
STEP = "    with torch.no_grad():\n        w -= lr * w.grad\n"

cases = [
    right("fix", START + ZERO + LOSS + STEP),
    right("fix", START + "    w.grad = None\n" + LOSS + STEP),
    right("fix", START + ZERO + LOSS + "    w.data = w.data - lr * w.grad\n"),
    right("fix", "X = torch.tensor(X0)\ny = torch.tensor(y0)\nw = torch.tensor(w0, requires_grad=True)\n"
          "opt = torch.optim.SGD([w], lr=lr)\nfor step in range(steps):\n    opt.zero_grad()\n"
          + LOSS + "    opt.step()\n"),
    wrong("fix", START + ZERO + LOSS + "    with torch.no_grad():\n        w = w - lr * w.grad\n",
          at="w = w - lr * w.grad", kind="code_error",
          mistake="w rebound to a new tensor made under no_grad: it no longer requires grad, "
                  "so the next backward fails",
          expect=lambda P: RAISES),
    wrong("fix", START + ZERO + LOSS + "    w -= lr * w.grad\n",
          at="w -= lr * w.grad", kind="code_error",
          mistake="the in-place update of a leaf that requires grad, outside torch.no_grad()",
          expect=lambda P: RAISES),
    wrong("fix", START + LOSS + STEP,
          at="L.backward()", kind="accumulation",
          mistake="w.grad never zeroed: every step adds to it, and each update uses the running sum",
          expect=lambda P: descend(P, accumulate=True)),
    wrong("fix", START + LOSS + STEP + "    w.grad.zero_()\n",
          at="    w.grad.zero_()", kind="accumulation",
          mistake="zeroing moved after the update: right steps, but the last gradient is wiped at the end",
          expect=lambda P: {"w.grad": torch.zeros(2)}),
    wrong("fix", START + "    L = ((X @ w - y) ** 2).mean()\n    L.backward()\n    w.grad.zero_()\n" + STEP,
          at="    w.grad.zero_()", kind="accumulation",
          mistake="zeroed between backward and the update: w never moves and ends with a zero gradient",
          expect=lambda P: descend(P, zero_before_step=True)),
    wrong("fix", START + ZERO + LOSS + "    w = (w - lr * w.grad).detach()\n",
          at=".detach()", kind="code_error",
          mistake="the updated w detached without requires_grad_(): the second step's backward has nothing to track",
          expect=lambda P: RAISES),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"w0": [-1.0, 0.8], "y0": [0.5, -2.0, 1.0]}])
