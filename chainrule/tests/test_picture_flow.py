"""The data the picture draws, measured in the reference run: the gradient arriving at
every node, the number travelling back on every edge, and each op's formula."""

from __future__ import annotations

import pytest

from chainrule import Analysis, analyze_program
from chainrule.tests.seeds import seed_analysis


def _ids(analysis: Analysis) -> dict[str, str]:
    """Node ids by the name a student reads (the op's variable where it has one)."""
    return {node.tensor_name or node.name: node.id for node in analysis.graph.nodes if node.kind != "output"}


def _messages(analysis: Analysis) -> dict[tuple[str, str], object]:
    return {(item.source, item.target): item.value for item in analysis.edge_grads}


def test_the_walkthrough_flow_plants_1_at_z_and_merges_3_and_4_at_x() -> None:
    analysis = seed_analysis("visual-walkthrough")  # z = x·y + x², x = 2, y = 3
    ids = _ids(analysis)
    grads = {name: analysis.node_grads[node_id] for name, node_id in ids.items()}
    # ∂z/∂a = ∂z/∂b = 1 (add passes its gradient on), x.grad = y + 2x = 7, y.grad = x = 2.
    assert grads == {"x": [7.0], "y": [2.0], "a": [1.0], "b": [1.0], "z": [1.0]}
    messages = _messages(analysis)
    assert messages[(ids["x"], ids["a"])] == [3.0]  # 1 · y along x → mul
    assert messages[(ids["x"], ids["b"])] == [4.0]  # 1 · 2x along x → pow
    assert messages[(ids["y"], ids["a"])] == [2.0]  # 1 · x along y → mul
    assert [1.0] == analysis.node_grads[next(n.id for n in analysis.graph.nodes if n.kind == "output")]


def test_two_backward_calls_add_up_in_the_flow_like_in_x_grad() -> None:
    analysis = seed_analysis("accumulation")  # y = x², backward twice at x = 2: 4 + 4
    assert analysis.node_grads["leaf:x"] == [8.0]


def test_a_seed_vector_and_a_matrix_product_give_gradients_shaped_like_their_nodes() -> None:
    analysis = analyze_program(
        program="W = torch.tensor(w0, requires_grad=True)\nx = torch.tensor(x0)\n"
                "h = W @ x\ny = h * h\ny.backward(torch.tensor([1.0, 0.5]))\n",
        params={"w0": [[1.0, 2.0], [3.0, 4.0]], "x0": [1.0, -1.0]}, parts=["W.grad"])
    ids = _ids(analysis)
    # h = [-1, -1]; ∂/∂h = seed · 2h = [-2, -1]; W.grad = outer(∂/∂h, x).
    assert analysis.node_grads[ids["h"]] == [-2.0, -1.0]
    assert analysis.node_grads[ids["W"]] == [[-2.0, 2.0], [-1.0, 1.0]]
    assert analysis.node_formulas[ids["h"]] == "W @ x"


def test_formulas_show_the_constants_and_exponents_the_program_wrote() -> None:
    analysis = analyze_program(
        program="x = torch.tensor(x0, requires_grad=True)\n"
                "p = x**3\nq = 4*x\nr = x + 5\ns = 1 - x\nt = x**0.5\nu = x**-1\nv = torch.tanh(p) / 2\n"
                "z = p + q + r + s + t + u + v\nz.backward()\n",
        params={"x0": 2.0}, parts=["x.grad"])
    ids = _ids(analysis)
    formulas = {name: analysis.node_formulas[ids[name]] for name in "pqrstuv"}
    assert formulas == {"p": "x³", "q": "4·x", "r": "x + 5", "s": "1 − x", "t": "x^0.5", "u": "x⁻¹",
                        "v": "tanh(p) / 2"}
    assert analysis.node_formulas[ids["z"]] == "p + q + r + s + t + u + v"


def test_an_analysis_cached_before_the_picture_data_still_loads() -> None:
    data = seed_analysis("visual-walkthrough").to_json()
    for key in ("node_grads", "edge_grads", "node_formulas", "local_derivatives"):
        data.pop(key)
    old = Analysis.from_json(data)
    assert old.node_grads == {} and old.edge_grads == [] and old.local_derivatives == []
    assert Analysis.from_json(seed_analysis("visual-walkthrough").to_json()).edge_grads


@pytest.mark.parametrize("program", [
    # A detached branch gets no flow; the graph of a program with no graph has none at all.
    "x = torch.tensor(x0, requires_grad=True)\na = x**2\nb = a.detach()\nz = b * x\nz.backward()\n",
])
def test_no_gradient_flows_through_a_detach(program: str) -> None:
    analysis = analyze_program(program=program, params={"x0": 2.0}, parts=["x.grad"])
    ids = _ids(analysis)
    assert analysis.node_grads["leaf:x"] == 4.0  # only through z = b·x: b = 4
    cut = [(edge.source, edge.target) for edge in analysis.graph.edges if edge.cut]
    assert cut and all(edge not in _messages(analysis) for edge in cut)
    assert ids["a"] not in analysis.node_grads
