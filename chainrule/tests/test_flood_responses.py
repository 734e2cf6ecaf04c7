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

    def leaf_name(node: Any, output: int = 0) -> str | None:
        if is_leaf_node(node):
            return next(name for name, tensor in leaves.items() if tensor is node.variable)
        return "h" if node is retained and output == 0 else None

    return z, leaves, leaf_name


def _shortcut_gives_what_walking_gives(y: Any, leaf_name: Any, *, at_least: int, rtol: float = 1e-5,
                                        atol: float = 1e-6) -> Any:
    walked = flood(y.grad_fn, torch.ones(()), leaf_name)
    shortcut = flood(y.grad_fn, torch.ones(()), leaf_name)
    keep_responses(shortcut, leaf_name)
    generator = torch.Generator().manual_seed(1)
    compared = 0
    for node in walked.order:
        right = walked.outgoing.get(id(node))
        if right is None:
            continue
        wrong = tuple(None if grad is None else grad + torch.randn(grad.shape, generator=generator) for grad in right)
        expected = leaf_deltas(walked, node, wrong, leaf_name)
        got = leaf_deltas(shortcut, node, wrong, leaf_name)
        assert expected.keys() == got.keys(), type(node).__name__
        for name in expected:
            assert torch.allclose(expected[name], got[name], rtol=rtol, atol=atol, equal_nan=True), \
                (type(node).__name__, name)
        compared += 1
    assert compared >= at_least
    return shortcut


def test_a_kept_response_gives_the_leaves_what_walking_every_node_gives() -> None:
    z, _, leaf_name = _graph()
    shortcut = _shortcut_gives_what_walking_gives(z, leaf_name, at_least=10)
    assert shortcut.responses  # the small nodes keep one


def test_a_program_hook_on_the_gradient_turns_the_shortcut_off() -> None:
    z, leaves, leaf_name = _graph()

    def hooks(node: Any, output: int = 0) -> list[Any]:
        return [lambda grad: grad.clamp(-0.1, 0.1)] if is_leaf_node(node) and node.variable is leaves["x"] else []

    record = flood(z.grad_fn, torch.ones(()), leaf_name, hooks)
    keep_responses(record, leaf_name)
    assert record.responses == {}  # a clamp is not linear: every difference walks the graph



def _layer_read_by_every_neuron(width: int, *, sqrt_of_zero: bool) -> tuple[Any, Any]:
    """h = a layer of `width` neurons, stacked, then read whole by each of `width` neurons above it. With
    `sqrt_of_zero` the layer has one more input, sqrt(0), whose local derivative is inf."""
    torch.manual_seed(1)
    x = torch.randn(4, requires_grad=True)
    w1 = torch.randn(width, 4, requires_grad=True)
    w2 = torch.randn(width, width, requires_grad=True)
    zero = torch.zeros((), requires_grad=True)
    extra = [torch.sqrt(zero * x.sum())] if sqrt_of_zero else []
    h = torch.stack([torch.tanh((w1[i] * x).sum()) for i in range(width)] + extra)
    y = torch.stack([torch.relu((w2[j] * h[:width]).sum()) for j in range(width)]).sum() + h[-1]
    leaves = {"x": x, "w1": w1, "w2": w2, "zero": zero}

    def leaf_name(node: Any, output: int = 0) -> str | None:
        if is_leaf_node(node):
            return next(name for name, tensor in leaves.items() if tensor is node.variable)
        return None

    return y, leaf_name


def _the_layer(record: Any) -> Any:
    return next(node for node in record.order if type(node).__name__ == "StackBackward0"
                and type(node.next_functions[0][0]).__name__ == "TanhBackward0")


def test_a_layer_every_neuron_reads_keeps_its_response_and_gives_what_walking_gives() -> None:
    """40 outputs × 1,764 leaf entries: more than a node read by one node may keep, not a shared one."""
    y, leaf_name = _layer_read_by_every_neuron(40, sqrt_of_zero=False)
    shortcut = _shortcut_gives_what_walking_gives(y, leaf_name, at_least=30, rtol=1e-4, atol=1e-5)
    assert id(_the_layer(shortcut)) in shortcut.responses


def test_a_response_with_an_inf_in_it_is_not_kept() -> None:
    """sqrt(0) below the layer: walking gives -inf to `zero` where 0 · inf in a response would give NaN."""
    y, leaf_name = _layer_read_by_every_neuron(6, sqrt_of_zero=True)
    shortcut = _shortcut_gives_what_walking_gives(y, leaf_name, at_least=30, rtol=1e-4, atol=1e-5)
    assert id(_the_layer(shortcut)) not in shortcut.responses
    assert shortcut.responses  # the nodes below the layer keep theirs
