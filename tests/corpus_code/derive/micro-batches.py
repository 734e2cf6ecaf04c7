"""code-micro-batches: fixes of gradient accumulation over micro-batches of 3 and 1."""

import torch
from code_cases import right, verify, wrong

SLUG = "code-micro-batches"


def weighted(P, weight):
    """Σ_b weight(n_b, N) · (2/n_b) X_bᵀ(X_b w - y_b): each micro-batch's mean gradient, written out,
    times the weight the student gave that micro-batch's mean loss."""
    w = torch.tensor(P["ws"])
    N = sum(len(ys) for _, ys in P["batches"])
    total = torch.zeros(2)
    for xs, ys in P["batches"]:
        X, y = torch.tensor(xs), torch.tensor(ys)
        total += weight(len(ys), N) * 2 / len(ys) * X.T @ (X @ w - y)
    return {"w.grad": total}


def last_share(P):
    N = sum(len(ys) for _, ys in P["batches"])
    xs, ys = P["batches"][-1]
    return weighted({**P, "batches": [[xs, ys]]}, lambda n, _: n / N)


HEAD = "w = torch.tensor(ws, requires_grad=True)\nN = sum(len(ys) for xs, ys in batches)\n"
LOOP = "for xs, ys in batches:\n    X = torch.tensor(xs)\n    y = torch.tensor(ys)\n"

cases = [
    right("fix", HEAD + LOOP + "    L = ((X @ w - y) ** 2).mean() * len(ys) / N\n    L.backward()\n"),
    right("fix", HEAD + LOOP + "    L = ((X @ w - y) ** 2).sum() / N\n    L.backward()\n"),
    right("fix", HEAD + "total = torch.zeros_like(w)\n" + LOOP
          + "    L = ((X @ w - y) ** 2).sum() / N\n    total += torch.autograd.grad(L, w)[0]\nw.grad = total\n"),
    wrong("fix", "w = torch.tensor(ws, requires_grad=True)\n" + LOOP
          + "    L = ((X @ w - y) ** 2).mean() / len(batches)\n    L.backward()\n",
          at="/ len(batches)", kind="wrong_local_derivative",
          mistake="the starter kept: each micro-batch's mean divided by the number of micro-batches, "
                  "as if they were of equal size",
          expect=lambda P: weighted(P, lambda n, N: 1 / len(P["batches"]))),
    wrong("fix", HEAD + LOOP + "    L = ((X @ w - y) ** 2).mean()\n    L.backward()\n",
          at="    L = ((X @ w - y) ** 2).mean()", kind="wrong_local_derivative",
          mistake="the micro-batch means added up without any weighting",
          expect=lambda P: weighted(P, lambda n, N: 1.0)),
    wrong("fix", HEAD + LOOP + "    L = ((X @ w - y) ** 2).sum()\n    L.backward()\n",
          at="    L = ((X @ w - y) ** 2).sum()", kind="wrong_local_derivative",
          mistake="squared errors summed over the batch: the mean's 1/N forgotten",
          expect=lambda P: weighted(P, lambda n, N: n)),
    wrong("fix", HEAD + LOOP + "    L = ((X @ w - y) ** 2).mean() * len(ys) / N\n"
          "    if w.grad is not None:\n        w.grad.zero_()\n    L.backward()\n",
          at="w.grad.zero_()", kind="accumulation",
          mistake="w.grad zeroed before each micro-batch's backward: only the last micro-batch is kept",
          expect=last_share),
    wrong("fix", HEAD + LOOP + "    L = ((X @ w - y) ** 2).mean() * len(ys) / N\nL.backward()\n",
          at="L.backward()", kind="accumulation", accept=["missing_path"],
          mistake="backward outside the loop: only the last micro-batch's loss is back-propagated",
          expect=last_share),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"ws": [-0.8, 0.3]}])
