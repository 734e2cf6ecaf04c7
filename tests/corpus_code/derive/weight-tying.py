"""code-weight-tying: programs with tied embeddings."""

import torch
from code_cases import right, verify, wrong

SLUG = "code-weight-tying"


def by_hand(P, input_use=1.0, output_use=1.0, reduction=None):
    """With G = (softmax(H Eᵀ) - onehot(next)) / B: the output use gives Gᵀ H, the input use
    scatters G E into the embedded rows."""
    E = torch.tensor(P["E0"])
    ids, nxt = P["ids0"], P["next0"]
    B = len(ids) if reduction is None else reduction
    H = E[ids]
    G = torch.softmax(H @ E.T, dim=1)
    G[range(len(nxt)), nxt] -= 1
    G = G / B
    grad = output_use * G.T @ H
    grad = grad.index_add(0, torch.tensor(ids), input_use * G @ E)
    return {"E.grad": grad}


START = "E = torch.tensor(E0, requires_grad=True)\nids = torch.tensor(ids0)\nnxt = torch.tensor(next0)\n"
XENT = "L = -torch.log_softmax(logits, dim=1)[torch.arange(len(nxt)), nxt].mean()\nL.backward()\n"

cases = [
    right("tied", START + "H = E[ids]\nlogits = H @ E.T\n" + XENT),
    right("tied", "import torch.nn.functional as F\n\n" + START
          + "H = F.embedding(ids, E)\nlogits = F.linear(H, E)\nL = F.cross_entropy(logits, nxt)\nL.backward()\n"),
    wrong("tied", START + "H = E[ids]\nlogits = H @ E.detach().T\n" + XENT,
          at="E.detach()", kind="missing_path",
          mistake="the output projection uses E detached: the output use's gradient is lost",
          expect=lambda P: by_hand(P, output_use=0.0)),
    wrong("tied", START + "H = E.data[ids]\nlogits = H @ E.T\n" + XENT,
          at="E.data[ids]", kind="missing_path",
          mistake="the embedding looked up in E.data: the input use's gradient is lost",
          expect=lambda P: by_hand(P, input_use=0.0)),
    wrong("tied", START + "E_out = E.clone().detach().requires_grad_()\nH = E[ids]\nlogits = H @ E_out.T\n" + XENT,
          at="E_out = E.clone().detach().requires_grad_()", kind="missing_path",
          mistake="a separate copy for the output layer: the weights are no longer tied, E gets only the input use",
          expect=lambda P: by_hand(P, output_use=0.0)),
    wrong("tied", START + "H = E[ids]\nlogits = H @ E.T\n"
          "L = -torch.log_softmax(logits, dim=1)[torch.arange(len(nxt)), nxt].sum()\nL.backward()\n",
          at="nxt].sum()", kind="wrong_local_derivative", edge=["index", "mean"],
          mistake="the cross-entropy summed over the batch: the mean's 1/B forgotten",
          expect=lambda P: by_hand(P, reduction=1)),
    wrong("tied", START + "H = E[ids].detach()\nlogits = H @ E.T\n" + XENT,
          at="E[ids].detach()", kind="missing_path",
          mistake="the embedded rows detached: the input use's gradient is lost",
          expect=lambda P: by_hand(P, input_use=0.0)),
]

if __name__ == "__main__":
    verify(SLUG, cases, points=[{"E0": [[-0.3, 0.9], [0.4, -1.1], [1.0, 0.0], [-0.6, -0.2]]}])
