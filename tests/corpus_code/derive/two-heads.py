"""code-two-heads: fixes of a second backward through a freed shared trunk."""

import torch
from code_cases import RAISES, right, verify, wrong

SLUG = "code-two-heads"


def by_hand(P, l1=1.0, l2=1.0, l2_reaches_w=True):
    """Gradients of l1·L1 + l2·L2 written out: dL/dh = 2 r1 a + 2 r2 b, dh/d(Wx) = 1 - h²."""
    x, W = torch.tensor(P["xs"]), torch.tensor(P["W0"])
    a, b = torch.tensor(P["a0"]), torch.tensor(P["b0"])
    h = torch.tanh(W @ x)
    r1, r2 = a @ h - P["y1"], b @ h - P["y2"]
    dh = l1 * 2 * r1 * a + (l2 * 2 * r2 * b if l2_reaches_w else 0)
    return {"W.grad": torch.outer(dh * (1 - h**2), x),
            "a.grad": l1 * 2 * r1 * h if l1 else None,
            "b.grad": l2 * 2 * r2 * h if l2 else None}


START = """
x = torch.tensor(xs)
W = torch.tensor(W0, requires_grad=True)
a = torch.tensor(a0, requires_grad=True)
b = torch.tensor(b0, requires_grad=True)
"""
TRUNK = "h = torch.tanh(W @ x)\n"
LOSSES = "L1 = (a @ h - y1) ** 2\nL2 = (b @ h - y2) ** 2\n"

cases = [
    right("fix", START + TRUNK + LOSSES + "L1.backward(retain_graph=True)\nL2.backward()\n"),
    right("fix", START + TRUNK + LOSSES + "(L1 + L2).backward()\n"),
    right("fix", START + TRUNK + "L1 = (a @ h - y1) ** 2\nL1.backward()\nh = torch.tanh(W @ x)  # a fresh graph\n"
          "L2 = (b @ h - y2) ** 2\nL2.backward()\n"),
    right("fix", START + TRUNK + LOSSES + """
grads = [torch.zeros_like(p) for p in (W, a, b)]
for loss in (L1, L2):
    parts = torch.autograd.grad(loss, (W, a, b), retain_graph=True, allow_unused=True)
    grads = [g if d is None else g + d for g, d in zip(grads, parts)]
W.grad, a.grad, b.grad = grads
"""),
    wrong("fix", START + TRUNK + LOSSES + "L1.backward()\nL2.backward(retain_graph=True)\n",
          at="L1.backward()", kind="code_error",
          mistake="retain_graph=True put on the second backward, not on the first that frees the graph",
          expect=lambda P: RAISES),
    wrong("fix", START + TRUNK + LOSSES + "L1.backward()\n",
          at="L1.backward()", kind="missing_path", accept=["accumulation", "untracked_leaf"],
          mistake="the second loss's backward deleted: L2 never reaches W or b",
          expect=lambda P: by_hand(P, l2=0.0)),
    wrong("fix", START + TRUNK + "L1 = (a @ h - y1) ** 2\nL2 = (b @ h.detach() - y2) ** 2\n"
          "L1.backward()\nL2.backward()\n",
          at="h.detach()", kind="missing_path",
          mistake="the trunk detached in head 2 so the second backward runs: L2's path to W is cut",
          expect=lambda P: by_hand(P, l2_reaches_w=False)),
    wrong("fix", START + TRUNK + LOSSES + "total = L1 + L2\nL1.backward(retain_graph=True)\ntotal.backward()\n",
          at="L1.backward(retain_graph=True)", kind="accumulation",
          mistake="backward on L1 and then on L1 + L2: L1's gradient is counted twice",
          expect=lambda P: by_hand(P, l1=2.0)),
    wrong("fix", START + "h = torch.tanh(W @ x).data\n" + LOSSES + "L1.backward()\nL2.backward()\n",
          at=".data", kind="missing_path", accept=["untracked_leaf"],
          mistake="the trunk taken through .data so both backwards run: no gradient reaches W at all",
          expect=lambda P: by_hand(P) | {"W.grad": None}),
    wrong("fix", START + TRUNK + LOSSES + "L1.backward(retain_graph=True)\nW.grad.zero_()\nL2.backward()\n",
          at="W.grad.zero_()", kind="accumulation",
          mistake="W.grad zeroed between the two heads' backward calls: W keeps only L2's gradient",
          expect=lambda P: by_hand(P) | {"W.grad": by_hand(P, l1=0.0)["W.grad"]}),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"xs": [-0.7, 1.3], "a0": [0.4, 1.1], "b0": [-1.2, 0.6]}])
