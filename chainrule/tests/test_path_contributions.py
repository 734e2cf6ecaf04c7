"""The contributions of all paths of a leaf add up to its .grad."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from chainrule import analyze_program
from chainrule.diagnosis.numeric import diagnose_numeric

PROGRAMS: dict[str, tuple[str, list[str]]] = {
    "two leaves, two paths": (
        "x = torch.tensor([2.0], requires_grad=True)\ny = torch.tensor([3.0], requires_grad=True)\n"
        "z = x * y + x**2\nz.backward()\n",
        ["x.grad", "y.grad"],
    ),
    "shared subexpression": (
        "x = torch.tensor([0.7], requires_grad=True)\ny = torch.tensor([-1.2], requires_grad=True)\n"
        "u = x * y\nz = u * u + torch.sin(u) + u\nz.backward()\n",
        ["x.grad", "y.grad"],
    ),
    "sin exp tanh sigmoid": (
        "x = torch.tensor([0.3, -0.8], requires_grad=True)\ny = torch.tensor([1.1, 0.4], requires_grad=True)\n"
        "z = (torch.sin(x) * torch.exp(y) + torch.tanh(x * y) + torch.sigmoid(x - y)).sum()\nz.backward()\n",
        ["x.grad", "y.grad"],
    ),
    "vector output with a seed": (
        "x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\ny = x**3 + x\n"
        "y.backward(torch.tensor([1.0, -2.0, 0.5]))\n",
        ["x.grad"],
    ),
    "matrix product mm and @": (
        "W = torch.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)\n"
        "X = torch.tensor([[2.0, 1.0, 0.0], [-1.0, 4.0, 2.0]], requires_grad=True)\n"
        "V = torch.tensor([[0.2], [0.1], [-0.3]], requires_grad=True)\n"
        "Y = W.mm(X) @ V\nL = (Y**2).sum()\nL.backward()\n",
        ["W.grad", "X.grad", "V.grad"],
    ),
    "broadcasting bias": (
        "x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [0.0, -1.0, 1.0], [2.0, 2.0, 2.0]])\n"
        "W = torch.tensor([[0.1, -0.2, 0.3], [0.0, 0.5, -0.5]], requires_grad=True)\n"
        "b = torch.tensor([0.1, -0.4], requires_grad=True)\n"
        "out = x @ W.T + b\nloss = (torch.relu(out) ** 2).mean()\nloss.backward()\n",
        ["W.grad", "b.grad"],
    ),
    "loop with many paths": (
        "x = torch.tensor([1.5], requires_grad=True)\ny = torch.tensor([0.5], requires_grad=True)\n"
        "h = x\nfor _ in range(4):\n    h = h * x + y\nh.backward()\n",
        ["x.grad", "y.grad"],
    ),
    "quotient and difference": (
        "x = torch.tensor([2.0], requires_grad=True)\ny = torch.tensor([0.5], requires_grad=True)\n"
        "z = (x - y) / (x + y) - 1 / x\nz.backward()\n",
        ["x.grad", "y.grad"],
    ),
    "two outputs, two backward calls": (
        "x = torch.tensor([2.0], requires_grad=True)\ny = torch.tensor([3.0], requires_grad=True)\n"
        "z1 = x * y\nz1.backward()\nz2 = x**2 + y\nz2.backward()\n",
        ["x.grad", "y.grad"],
    ),
    "nn.Linear parameters": (
        "layer = torch.nn.Linear(3, 2)\ninp = torch.tensor([[1.0, -1.0, 2.0], [0.5, 0.0, 1.0]])\n"
        "loss = (layer(inp) ** 2).sum()\nloss.backward()\n",
        ["layer.weight.grad", "layer.bias.grad"],
    ),
    "torch.autograd.backward with a seed": (
        "x = torch.tensor([1.0, -2.0], requires_grad=True)\ny = x * x * x\n"
        "torch.autograd.backward([y], [torch.tensor([1.0, 3.0])])\n",
        ["x.grad"],
    ),
    "outer product of a vector with itself": (
        "x = torch.tensor([1.0, 2.0, -1.0], requires_grad=True)\nM = x.unsqueeze(0) * x.unsqueeze(1)\n"
        "M.sum().backward()\n",
        ["x.grad"],
    ),
    "cross entropy": (
        "logits = torch.tensor([[2.0, 0.5, -1.0]], requires_grad=True)\n"
        "loss = torch.nn.functional.cross_entropy(logits, torch.tensor([1]))\nloss.backward()\n",
        ["logits.grad"],
    ),
    "mean of a relu layer": (
        "w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\nx = torch.tensor([1.0, 1.0, 1.0])\n"
        "h = torch.relu(w * x - 1).mean()\nh.backward()\n",
        ["w.grad"],
    ),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_it_splits_each_gradient_into_path_contributions_that_add_up(name: str) -> None:
    program, parts = PROGRAMS[name]
    analysis = analyze_program(program=program, params={}, parts=parts)
    assert analysis.notes == []
    for part in parts:
        reference = analysis.parts[part]
        paths = analysis.paths[reference.tensor]
        assert paths, part
        total = np.sum([np.asarray(path.contribution, dtype=float) for path in paths], axis=0)
        assert total.shape == tuple(reference.shape or [])
        np.testing.assert_allclose(total, np.asarray(reference.value), rtol=1e-5, atol=1e-6)


def test_it_names_module_parameters_by_attribute() -> None:
    program, parts = PROGRAMS["nn.Linear parameters"]
    analysis = analyze_program(program=program, params={}, parts=parts)
    assert {p.names[0] for p in analysis.paths["layer.weight"]} == {"layer.weight"}
    assert analysis.paths["layer.weight"][0].names[1:] == ["t", "addmm", "pow", "sum", "loss"]


def test_it_reduces_a_broadcast_bias_gradient_to_the_bias_shape() -> None:
    program, parts = PROGRAMS["broadcasting bias"]
    analysis = analyze_program(program=program, params={}, parts=parts)
    (path,) = analysis.paths["b"]
    assert np.asarray(path.contribution).shape == (2,)


def test_it_counts_both_calls_when_gradients_accumulate_from_two_outputs() -> None:
    program, parts = PROGRAMS["two outputs, two backward calls"]
    analysis = analyze_program(program=program, params={}, parts=parts)
    assert {tuple(p.names) for p in analysis.paths["x"]} == {("x", "mul", "z1"), ("x", "pow", "add", "z2")}


def test_it_restarts_the_sum_after_grad_is_zeroed() -> None:
    program = (
        "x = torch.tensor([2.0], requires_grad=True)\ny = x**2\ny.backward(retain_graph=True)\n"
        "x.grad.zero_()\ny.backward()\n"
    )
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    assert analysis.parts["x.grad"].value == [4.0]
    assert [p.contribution for p in analysis.paths["x"]] == [[4.0]]
    assert analysis.notes == []


def test_it_caps_path_enumeration_and_says_so() -> None:
    program, parts = PROGRAMS["loop with many paths"]
    analysis = analyze_program(program=program, params={}, parts=parts, max_paths=2)
    assert len(analysis.paths["x"]) == 2
    assert any("first 2 paths of x" in note for note in analysis.notes)


def test_a_graph_with_a_million_routes_is_analysed_whole() -> None:
    """Six layers of eight units, each unit reading every unit of the layer before: 8⁶ = 262,144
    routes from x to the loss that all read the same names. They are carried down together, node by
    node, so none is left out and the path's contribution is the whole gradient."""
    program = (
        "x = torch.tensor([0.3], requires_grad=True)\nh = [x * (0.1 * k + 0.5) for k in range(8)]\n"
        "for layer in range(5):\n"
        "    s = torch.stack(h).sum()\n"
        "    h = [torch.tanh(s * (0.05 * k - 0.2)) for k in range(8)]\n"
        "L = torch.stack(h).sum()\nL.backward()\n"
    )
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    assert not any("too many paths" in note or "were enumerated" in note for note in analysis.notes)
    [path] = analysis.paths["x"]
    assert np.allclose(path.contribution, analysis.parts["x.grad"].value, rtol=1e-5)
    graph_edges = {(edge.source, edge.target) for edge in analysis.graph.edges}
    assert set(path.edges) <= graph_edges | {(a, b) for a, b in path.edges if b.startswith("out:")}
    assert len(path.edges) >= 8 * 6  # every unit of every layer is on the path, not only the first route's


def test_routes_that_read_alike_are_listed_while_few() -> None:
    """Two routes x → mul → add → z (x·a + x·b): each is listed with its own contribution, as the
    feedback 'one of the 2 routes' needs."""
    program = "x = torch.tensor([2.0], requires_grad=True)\nz = x * 3.0 + x * 5.0\nz.backward()\n"
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    [path] = analysis.paths["x"]
    assert path.contribution == [8.0]
    assert len({target for source, target in path.edges if source == "leaf:x"}) == 2


def test_capping_counts_names_not_the_outputs_routes_arrive_at() -> None:
    """a, b, c = unbind(x): a·b·c reaches unbind at three outputs but reads two ways from x, so two
    paths fit max_paths=2; the one through a and b has both their routes."""
    program = ("x = torch.tensor([0.7, -1.3, 2.0], requires_grad=True)\na, b, c = torch.unbind(x)\n"
               "z = a * b * c\nz.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["x.grad"], max_paths=2)
    assert not any("were enumerated" in note for note in analysis.notes)
    assert [path.names for path in analysis.paths["x"]] == [["x", "unbind", "mul", "mul", "z"],
                                                          ["x", "unbind", "mul", "z"]]
    assert np.allclose(analysis.paths["x"][0].contribution, [-2.6, 1.4, 0.0])
    [first] = analyze_program(program=program, params={}, parts=["x.grad"], max_paths=1).paths["x"]
    assert np.allclose(first.contribution, [-2.6, 1.4, 0.0])


def test_a_capped_path_keeps_the_routes_that_read_like_it_from_farther_up() -> None:
    """N = a·b with b = 3a reaches z = 2N + N both ways; with max_paths=1 the path kept,
    x → add → mul → mul → add → z, is read by the route through 2N and a (2·b = 9) and by the route
    straight from z's add to N and on through b (a·3 = 4.5), which the cap at N must not drop."""
    program = ("x = torch.tensor([0.5], requires_grad=True)\na = x + 1\nb = a * 3.0\nN = a * b\n"
               "z = N * 2.0 + N\nz.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["x.grad"], max_paths=1)
    [path] = analysis.paths["x"]
    assert path.names == ["x", "add", "mul", "mul", "add", "z"]
    assert path.contribution == [13.5]
    assert len(path.edges) == 8


def test_the_product_rule_is_not_read_off_routes_that_are_not_listed() -> None:
    """L = u·v with u = 158.5x reached from x by 36 routes reading alike (too many to list) and one
    more: taking the product rule as u′·v′ predicts 158.5·cos x, from u′ measured in the backward call,
    never what the one listed route alone would make of it."""
    program = ("x = torch.tensor(0.7, requires_grad=True)\na = torch.stack([x * (k + 1.0) for k in range(6)]).sum()\n"
               "u = torch.stack([a * (0.1 * k + 1) for k in range(6)]).sum() + x\nL = u * torch.sin(x)\nL.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    predicted = [h.value for h in analysis.hypotheses["x.grad"] if h.detail.get("rule") == "product_rule"]
    assert predicted == [pytest.approx(158.5 * np.cos(0.7), rel=1e-5)]


def test_a_product_at_the_end_of_an_unrolled_recurrence_is_named_when_its_routes_are_past_counting() -> None:
    """h = tanh(h·x + h) six times, then L = h·eˣ: x reaches h by more routes than the 64 paths listed.
    dL/dx worked out as h′·(eˣ)′ is the product rule broken at L's product, named with its factors."""
    program = ("x = torch.tensor(0.3, requires_grad=True)\nh = x\nfor _ in range(6):\n    h = torch.tanh(h * x + h)\n"
               "L = h * torch.exp(x)\nL.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    x = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    h = x
    for _ in range(6):
        h = torch.tanh(h * x + h)
    (dh,) = torch.autograd.grad(h, x, retain_graph=True)
    verdict = diagnose_numeric(analysis=analysis, part="x.grad", answer=float(dh) * math.exp(0.3))
    assert (verdict.kind, verdict.detail.get("rule"), verdict.detail.get("factors")) == \
        ("product_of_paths", "product_rule", ["h", "e^x"])
    right = float(torch.autograd.grad(h * torch.exp(x), x)[0])
    assert diagnose_numeric(analysis=analysis, part="x.grad", answer=right).kind == "correct"


def test_paths_are_found_when_the_backward_calls_run_out_above_the_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nodes are carried parents first, so the leaves come last: when MAX_NODE_CALLS runs out on the
    way, the names are still read down to them, and the first max_paths paths carried again alone."""
    from chainrule.analysis import path_contributions

    program = ("x = torch.tensor([0.9], requires_grad=True)\nh = x\nfor _ in range(12):\n    h = h * x + h\n"
               "h.backward()\n")
    whole = analyze_program(program=program, params={}, parts=["x.grad"], max_paths=5)
    monkeypatch.setattr(path_contributions, "MAX_NODE_CALLS", 40)
    short = analyze_program(program=program, params={}, parts=["x.grad"], max_paths=5)
    assert [(p.names, p.contribution, p.edges) for p in short.paths["x"]] == \
        [(p.names, p.contribution, p.edges) for p in whole.paths["x"]]
    assert len(short.paths["x"]) == 5


def test_the_product_rule_at_one_output_of_an_unbind_uses_that_outputs_derivative() -> None:
    """a, b = stack([x², x³]).unbind(): a and b are two outputs of one autograd node. d(a·sin x)/dx
    worked out as a′·(sin x)′ = 2x·cos x is named at a·sin x, not read with b′ = 3x²."""
    program = ("x = torch.tensor(0.7, requires_grad=True)\na, b = torch.stack([x * x, x * x * x]).unbind()\n"
               "L = a * torch.sin(x) + b * torch.cos(x)\nL.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    x = 0.7
    answer = 3 * x * x * math.cos(x) - x ** 3 * math.sin(x) + 2 * x * math.cos(x)
    verdict = diagnose_numeric(analysis=analysis, part="x.grad", answer=answer)
    assert (verdict.kind, verdict.detail.get("rule"), verdict.detail.get("factors")) == \
        ("product_of_paths", "product_rule", ["a", "sin(x)"])
