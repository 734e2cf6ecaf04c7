"""An op with several outputs on one autograd node (`for row in x`, `a, b = x.chunk(2)`): each output is a
node of the student's graph, with its own value, formula, gradient, edges and paths."""

from __future__ import annotations

import math

import pytest

from chainrule import analyze_program
from chainrule.diagnosis.numeric import diagnose_numeric
from chainrule.picture.disclosure import Disclosure
from chainrule.picture.graph import graph_dot

LOOP = ("x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\ns = 0\nfor xi in x:\n"
        "    s = s + torch.sin(xi) * xi\ns.backward()\n")


def test_each_row_of_a_loop_over_a_tensor_is_a_node_with_its_own_value_and_gradient() -> None:
    analysis = analyze_program(program=LOOP, params={}, parts=["x.grad"])
    rows = [node for node in analysis.graph.nodes if node.name == "unbind"]
    assert [node.value for node in rows] == [0.5, -1.0, 2.0]
    assert [analysis.node_formulas[node.id] for node in rows] == ["x[0]", "x[1]", "x[2]"]
    edges = {(edge.source, edge.target) for edge in analysis.graph.edges}
    nodes = analysis.graph.nodes_by_id()
    for row in rows:
        assert ("leaf:x", row.id) in edges
        [sin] = [nodes[target] for source, target in edges if source == row.id and nodes[target].name == "sin"]
        assert sin.value == pytest.approx(math.sin(row.value), abs=1e-6)  # sin reads this row, no other
        v = row.value
        assert analysis.node_grads[row.id] == pytest.approx(math.sin(v) + v * math.cos(v), abs=1e-6)


def test_a_path_through_one_row_passes_through_that_rows_node_and_reaches_only_its_entry() -> None:
    analysis = analyze_program(program=LOOP, params={}, parts=["x.grad"])
    rows = [node.id for node in analysis.graph.nodes if node.name == "unbind"]
    for path in analysis.paths["x"]:
        [row] = [target for source, target in path.edges if source == "leaf:x"]
        entry = rows.index(row)
        assert [k for k, value in enumerate(path.contribution) if value != 0] == [entry]


def test_the_pieces_of_a_chunk_are_drawn_with_their_names_values_and_slices() -> None:
    program = ("x = torch.tensor([0.5, -1.0, 2.0, 0.3], requires_grad=True)\na, b = x.chunk(2)\n"
               "L = (a * a).sum() + torch.sin(b).sum()\nL.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    named = {node.tensor_name: node for node in analysis.graph.nodes if node.name == "split"}
    assert named["a"].value == [0.5, -1.0] and named["b"].value == [2.0, 0.3]
    [sin] = [node for node in analysis.graph.nodes if node.name == "sin"]
    assert any(edge.source == named["b"].id and edge.target == sin.id for edge in analysis.graph.edges)
    assert analysis.node_formulas[sin.id] == "sin(b)"
    dot = graph_dot(analysis=analysis, disclosure=Disclosure(everything=True))
    assert "b = x[2:4] = [2, 0.3]" in dot
    assert "a = x[0:2] = [0.5, -1]" in dot


def test_a_piece_of_a_split_along_the_last_dim_reads_as_that_slice() -> None:
    program = ("W = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)\n"
               "parts = W.split([1, 2], dim=-1)\nL = parts[0].sum() * parts[1].sum()\nL.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["W.grad"])
    pieces = [node for node in analysis.graph.nodes if node.name.startswith("split")]
    assert [analysis.node_formulas[node.id] for node in pieces] == ["W[:, 0:1]", "W[:, 1:3]"]
    assert [node.shape for node in pieces] == [[2, 1], [2, 2]]
    assert analysis.graph.node(pieces[1].id).value == [[2.0, 3.0], [5.0, 6.0]]


def test_the_product_rule_at_the_second_output_of_an_unbind_is_predicted_from_that_output() -> None:
    """a, b = stack([x², x³]).unbind(): d(b·cos x)/dx worked out as b′·(cos x)′ = 3x²·(−sin x), the other
    term right, is the product rule broken at b·cos x, with b's own value and derivative."""
    program = ("x = torch.tensor(0.7, requires_grad=True)\na, b = torch.stack([x * x, x * x * x]).unbind()\n"
               "L = a * torch.sin(x) + b * torch.cos(x)\nL.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    x = 0.7
    answer = 2 * x * math.sin(x) + x * x * math.cos(x) + 3 * x * x * -math.sin(x)
    verdict = diagnose_numeric(analysis=analysis, part="x.grad", answer=answer)
    assert (verdict.kind, verdict.detail.get("rule"), verdict.detail.get("factors")) == \
        ("product_of_paths", "product_rule", ["b", "cos(x)"])


def test_a_wrong_derivative_at_a_rows_consumer_is_named_and_valued_at_that_row() -> None:
    """d sin(x[1])/dx[1] taken as −cos: the slip is told at sin(x[1]), with cos(x[1]) = cos(−1)."""
    analysis = analyze_program(program=LOOP, params={}, parts=["x.grad"])
    answer = [math.sin(a) + a * math.cos(a) for a in (0.5, -1.0, 2.0)]
    answer[1] = math.sin(-1.0) + -1.0 * -math.cos(-1.0)  # sin′ taken as −cos at the second row only
    verdict = diagnose_numeric(analysis=analysis, part="x.grad", answer=answer)
    assert (verdict.kind, verdict.detail["label"], verdict.detail["right"]) == \
        ("wrong_local_derivative", "x[1]", "cos(x[1])")
    assert verdict.detail["right_value"] == pytest.approx(math.cos(-1.0))


def test_a_backward_call_on_the_second_output_starts_there() -> None:
    """s, m = torch.std_mean(x); m.backward(): the seed enters the mean, not the standard deviation."""
    program = "x = torch.tensor([1.0, 2.0, 4.0], requires_grad=True)\ns, m = torch.std_mean(x)\nm.backward()\n"
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    [mean] = [node for node in analysis.graph.nodes if node.kind == "op"]
    assert (mean.tensor_name, mean.value, analysis.node_formulas[mean.id]) == ("m", pytest.approx(7 / 3),
                                                                               "std_mean(x)[1]")
    [path] = analysis.paths["x"]
    assert path.contribution == pytest.approx([1 / 3] * 3)
    assert diagnose_numeric(analysis=analysis, part="x.grad", answer=[1 / 3] * 3).kind == "correct"


def test_the_picture_names_each_row_where_its_consumers_read_it() -> None:
    analysis = analyze_program(program=LOOP, params={}, parts=["x.grad"])
    dot = graph_dot(analysis=analysis, disclosure=Disclosure(everything=True))
    assert "x[1] = -1" in dot and "sin(x[1]) = -0.84147" in dot
    assert "/∂x[1] = cos(x[1])" in dot  # an indexed symbol needs no parentheses
    assert "unbind(x)" not in dot


def test_each_row_of_a_matrix_in_a_loop_reads_as_that_row_times_the_input() -> None:
    program = ("W = torch.tensor([[1.0, 2.0], [3.0, -1.0]], requires_grad=True)\nx = torch.tensor([0.5, 2.0])\n"
               "L = 0\nfor row in W:\n    L = L + torch.tanh(row @ x)\nL.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["W.grad"])
    formulas = sorted(analysis.node_formulas[node.id] for node in analysis.graph.nodes if node.name == "tanh")
    assert formulas == ["tanh(W[0] @ x)", "tanh(row @ x)"]  # `row` holds the last row when the loop ends
    messages = {(m.source, m.target): m.value for m in analysis.edge_grads}
    rows = [node.id for node in analysis.graph.nodes if node.name == "unbind"]
    first, second = (messages["leaf:W", row] for row in rows)
    assert first[1] == [0.0, 0.0] and second[0] == [0.0, 0.0]  # each row's gradient reaches its own row of W
    slope_0, slope_1 = 1 - math.tanh(4.5) ** 2, 1 - math.tanh(-0.5) ** 2  # W[0] @ x = 4.5, W[1] @ x = -0.5
    assert first[0] == pytest.approx([0.5 * slope_0, 2.0 * slope_0], rel=1e-3)  # float32 near tanh′ = 0
    assert second[1] == pytest.approx([0.5 * slope_1, 2.0 * slope_1], rel=1e-4)


def test_the_pieces_of_one_call_on_nodes_of_their_own_are_nodes_of_their_own() -> None:
    """torch.tensor_split makes each piece on its own autograd node, from one call: two nodes, two ids."""
    program = ("x = torch.tensor([0.5, -1.0, 2.0, 0.3], requires_grad=True)\na, b = torch.tensor_split(x, 2)\n"
               "L = (a * a).sum() + torch.sin(b).sum()\nL.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    pieces = {node.tensor_name: node for node in analysis.graph.nodes if node.name == "slice"}
    assert (pieces["a"].value, pieces["b"].value) == ([0.5, -1.0], [2.0, 0.3])
    assert pieces["a"].id != pieces["b"].id
    assert [analysis.node_formulas[pieces[name].id] for name in "ab"] == ["x[0:2]", "x[2:4]"]
    assert analysis.node_grads[pieces["a"].id] == pytest.approx([1.0, -2.0])
    assert analysis.node_grads[pieces["b"].id] == pytest.approx([math.cos(2.0), math.cos(0.3)], abs=1e-6)


def test_a_meshgrid_draws_both_grids() -> None:
    program = ("x = torch.tensor([0.5, -1.0], requires_grad=True)\n"
               "y = torch.tensor([2.0, 3.0, 1.0], requires_grad=True)\n"
               "X, Y = torch.meshgrid(x, y, indexing='ij')\nL = (X * Y * Y).sum()\nL.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["x.grad", "y.grad"])
    grids = {node.tensor_name: node for node in analysis.graph.nodes if node.tensor_name in ("X", "Y")}
    assert grids["X"].value == [[0.5, 0.5, 0.5], [-1.0, -1.0, -1.0]]
    assert grids["Y"].value == [[2.0, 3.0, 1.0], [2.0, 3.0, 1.0]]
    assert analysis.node_grads[grids["X"].id] == [[4.0, 9.0, 1.0], [4.0, 9.0, 1.0]]  # Y²


def test_a_layer_norm_keeps_the_formulas_of_its_graph() -> None:
    """layer_norm's node has inputs past the second that need no gradient: its formula is still written."""
    program = ("x = torch.tensor([[0.5, -1.0, 2.0]], requires_grad=True)\ny = torch.nn.functional.layer_norm(x, (3,))\n"
               "L = (y * torch.tensor([1.0, 2.0, 3.0])).sum()\nL.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    assert not any("not drawn" in note for note in analysis.notes)
    assert analysis.node_formulas[next(n.id for n in analysis.graph.nodes if n.tensor_name == "L")] == "Σ (y·c)"


def test_a_negative_index_reads_as_written() -> None:
    program = "x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\nL = x[-1] * x[1:]\nL.sum().backward()\n"
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    formulas = {analysis.node_formulas[node.id] for node in analysis.graph.nodes if node.name in ("select", "slice")}
    assert formulas == {"x[-1]", "x[1:]"}


CHUNKED = ("x = torch.tensor([0.5, -1.0, 2.0, 0.3], requires_grad=True)\na, b = x.chunk(2)\n{line}\n"
           "L = (a * a).sum() + torch.sin(b).sum()\nL.backward()\n")


@pytest.mark.parametrize("kept", ["a", "b"])
def test_a_retained_piece_has_its_own_paths_and_gradient(kept: str) -> None:
    program = CHUNKED.format(line=f"{kept}.retain_grad()")
    analysis = analyze_program(program=program, params={}, parts=["x.grad", f"{kept}.grad"])
    right = {"a": [1.0, -2.0], "b": [math.cos(2.0), math.cos(0.3)]}[kept]
    total = [sum(values) for values in zip(*(path.contribution for path in analysis.paths[kept]), strict=True)]
    assert total == pytest.approx(right, abs=1e-6)
    ids = {node.id for node in analysis.graph.nodes}
    assert all(node in ids for hypothesis in analysis.hypotheses[f"{kept}.grad"] for node in hypothesis.highlight.nodes)
    assert diagnose_numeric(analysis=analysis, part=f"{kept}.grad", answer=right).kind == "correct"


def test_a_retained_output_the_gradient_never_reaches_has_no_paths() -> None:
    """s, m = torch.std_mean(x) with s kept: (m·m).backward() leaves s.grad None, so s has no path."""
    program = ("x = torch.tensor([1.0, 2.0, 4.0], requires_grad=True)\ns, m = torch.std_mean(x)\ns.retain_grad()\n"
               "(m * m).backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    assert not analysis.paths.get("s")
    assert sum(analysis.paths["x"][0].contribution) == pytest.approx(2 * 7 / 3, rel=1e-6)


def test_a_hook_on_the_second_piece_is_applied_where_it_arrives() -> None:
    program = CHUNKED.format(line="b.register_hook(lambda g: 3 * g)")
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    right = [1.0, -2.0, 3 * math.cos(2.0), 3 * math.cos(0.3)]
    total = [sum(values) for values in zip(*(path.contribution for path in analysis.paths["x"]), strict=True)]
    assert total == pytest.approx(right, abs=1e-5)
    assert analysis.node_grads["leaf:x"] == pytest.approx(right, abs=1e-5)
