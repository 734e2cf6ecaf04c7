"""A difference carried down the graph gives the same leaf gradients whether it walks every node
below or stops at a node's kept response (the shortcut that keeps the analysis near-linear)."""

from __future__ import annotations

from typing import Any

import torch

from chainrule.analysis.mutations.flood import flood, keep_responses, leaf_deltas
from chainrule.analysis.node_catalog import is_leaf_node


def _graph() -> tuple[Any, dict[str, torch.Tensor], Any]:
    torch.manual_seed(0)
    x = torch.randn(3, requires_grad=True)
    w = torch.randn(2, 3, requires_grad=True)
    b = torch.randn(2, requires_grad=True)
    h = torch.tanh(w @ x + b)  # a bias broadcast, a matrix product
    h.retain_grad()
    first, second = h.unbind(0)  # an op with two outputs
    z = (first * second + (x * x).sum() + torch.sigmoid(h).sum()) ** 2  # x reached along three routes
    leaves = {"x": x, "w": w, "b": b}
    retained = h.grad_fn

    def leaf_name(node: Any) -> str | None:
        if is_leaf_node(node):
            return next(name for name, tensor in leaves.items() if tensor is node.variable)
        return "h" if node is retained else None

    return z, leaves, leaf_name


def test_a_kept_response_gives_the_leaves_what_walking_every_node_gives() -> None:
    z, _, leaf_name = _graph()
    walked = flood(z.grad_fn, torch.ones(()), leaf_name)
    shortcut = flood(z.grad_fn, torch.ones(()), leaf_name)
    keep_responses(shortcut, leaf_name)
    assert shortcut.responses  # the small nodes keep one
    position = {id(node): index for index, node in enumerate(walked.order)}
    generator = torch.Generator().manual_seed(1)
    compared = 0
    for node in walked.order:
        right = walked.outgoing.get(id(node))
        if right is None:
            continue
        wrong = tuple(None if grad is None else grad + torch.randn(grad.shape, generator=generator) for grad in right)
        expected = leaf_deltas(walked, node, wrong, leaf_name, position)
        got = leaf_deltas(shortcut, node, wrong, leaf_name, position)
        assert expected.keys() == got.keys()
        for name in expected:
            assert torch.allclose(expected[name], got[name], rtol=1e-5, atol=1e-6), (type(node).__name__, name)
        compared += 1
    assert compared >= 10


def test_a_program_hook_on_the_gradient_turns_the_shortcut_off() -> None:
    z, leaves, leaf_name = _graph()

    def hooks(node: Any) -> list[Any]:
        return [lambda grad: grad.clamp(-0.1, 0.1)] if is_leaf_node(node) and node.variable is leaves["x"] else []

    record = flood(z.grad_fn, torch.ones(()), leaf_name, hooks)
    keep_responses(record, leaf_name)
    assert record.responses == {}  # a clamp is not linear: every difference walks the graph
