"""A non-leaf kept with retain_grad() (h.retain_grad(); part "h.grad") has chain-rule paths of its own,
from the node that made it to the output: a student who slips on one of them is told which, as for a
leaf. Before, every wrong h.grad was "matches none of the typical mistakes"."""

from __future__ import annotations

import math

import numpy as np

from chainrule import Diagnosis, analyze_program, diagnose_numeric
from chainrule.model import Analysis

PROGRAM = (
    "x = torch.tensor(x0, requires_grad=True)\n"
    "y = torch.tensor(3.0, requires_grad=True)\n"
    "h = x * y\n"
    "h.retain_grad()\n"
    "z = h * h + torch.sin(h)\n"
    "z.backward()\n"
)
H = 0.7 * 3.0  # x0 = 0.7 (with 0.5, 2h would equal y)


def analysis() -> Analysis:
    return analyze_program(program=PROGRAM, params={"x0": 0.7}, parts=["h.grad", "x.grad"])


def diagnose(answer: float, part: str = "h.grad") -> Diagnosis:
    return diagnose_numeric(analysis=analysis(), part=part, answer=answer, rel_tol=1e-4, abs_tol=1e-6)


def test_a_retained_tensor_has_its_own_paths_adding_up_to_its_grad() -> None:
    found = analysis()
    paths = {tuple(path.names): path.contribution for path in found.paths["h"]}
    assert set(paths) == {("h", "mul", "add", "z"), ("h", "sin", "add", "z")}
    assert math.isclose(float(np.sum([paths[p] for p in paths])), 2 * H + math.cos(H), rel_tol=1e-6)
    assert not any("do not add up" in note for note in found.notes)


def test_the_right_h_grad_is_correct() -> None:
    assert diagnose(2 * H + math.cos(H)).kind == "correct"


def test_leaving_out_the_sin_path_from_h_is_named() -> None:
    diagnosis = diagnose(2 * H)  # only h·h's 2h: the sin path left out
    assert diagnosis.kind == "missing_path"
    assert diagnosis.paths == [["h", "sin", "add", "z"]]
    assert "leaves out the path h → sin → add → z" in diagnosis.message


def test_d_of_h_times_h_taken_as_h_is_the_edge_out_of_h() -> None:
    diagnosis = diagnose(H + math.cos(H))
    assert diagnosis.kind == "wrong_local_derivative"
    assert diagnosis.detail["edge"] == ["h", "mul"]  # read from h, as its paths are, not "mul → mul"
    assert (diagnosis.detail["used"], diagnosis.detail["right"]) == ("h", "2·h")
    assert "(the edge h → mul)" in diagnosis.message


def test_a_flipped_cos_on_the_path_from_h_is_named() -> None:
    diagnosis = diagnose(2 * H - math.cos(H))
    assert diagnosis.kind == "wrong_local_derivative"
    assert diagnosis.detail["edge"] == ["h", "sin"] and diagnosis.detail["used"] == "-cos(h)"


def test_the_highlight_starts_at_the_node_that_made_h() -> None:
    found = analysis()
    mul_of_leaves = next(node.id for node in found.graph.nodes if node.kind == "op" and node.name == "mul"
                         and any(edge.source == "leaf:x" and edge.target == node.id for edge in found.graph.edges))
    diagnosis = diagnose_numeric(analysis=found, part="h.grad", answer=-(2 * H + math.cos(H)),
                                 rel_tol=1e-4, abs_tol=1e-6)
    assert diagnosis.kind == "sign_error"
    assert mul_of_leaves in diagnosis.highlight.nodes and "leaf:h" not in diagnosis.highlight.nodes


def test_the_leaves_paths_are_unchanged_by_the_retained_tensor_on_them() -> None:
    diagnosis = diagnose(3.0 * 2 * H, part="x.grad")  # x.grad without the sin path
    assert diagnosis.kind == "missing_path"
    assert diagnosis.paths == [["x", "mul", "sin", "add", "z"]]


CUBE = "x = torch.tensor(x0, requires_grad=True)\nu = 2 * x + 1\nu.retain_grad()\nz = u ** 3\nz.backward()\n"


def test_x_grad_given_for_u_grad_is_told_as_one_edge_too_far() -> None:
    """u = 2x + 1, z = u³ at x = 1.5: u.grad = 3u² = 48; 96 is x.grad, the 2 of du/dx taken along. It was
    told as 'a doubled local derivative': each edge contributes once."""
    analysis = analyze_program(program=CUBE, params={"x0": 1.5}, parts=["u.grad", "x.grad"])
    diagnosis = diagnose_numeric(analysis=analysis, part="u.grad", answer=96.0)
    assert (diagnosis.kind, diagnosis.detail["tensor"], diagnosis.detail["where"]) == ("other_gradient", "x", "below")
    assert "Your u.grad is x.grad" in diagnosis.message and "u.grad stops at u" in diagnosis.message
    assert diagnosis.highlight.nodes == ["leaf:x"]
    upward = diagnose_numeric(analysis=analysis, part="x.grad", answer=48.0)  # u.grad given for x.grad
    # ... is du/dx = 2 forgotten on x → mul, the likelier reading; giving u's gradient is still mentioned
    assert (upward.kind, upward.detail["rule"], upward.detail["edge"]) == ("wrong_local_derivative", "generic_one",
                                                                           ["x", "mul"])
    assert "other_gradient" in upward.also


def test_the_gradients_of_two_leaves_swapped_are_named() -> None:
    program = ("x = torch.tensor(2.0, requires_grad=True)\ny = torch.tensor(3.0, requires_grad=True)\n"
               "z = x * y + x ** 2\nz.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["x.grad", "y.grad"])
    diagnosis = diagnose_numeric(analysis=analysis, part="y.grad", answer=7.0)  # x.grad's 7
    assert (diagnosis.kind, diagnosis.detail["tensor"], diagnosis.detail["where"]) == ("other_gradient", "x", "")
    assert diagnosis.message.startswith("Your y.grad is x.grad, the gradient of another tensor.")


def test_routes_that_read_alike_are_told_apart_by_what_they_pass_through() -> None:
    """z = h·h + 3·h: both routes read h → mul → add → z. Dropping the 3h term and dropping the h² term got
    the same words, so the student could not tell which term they missed."""
    program = ("x = torch.tensor(x0, requires_grad=True)\ny = torch.tensor(2.0, requires_grad=True)\nh = x * y\n"
               "h.retain_grad()\nz = h * h + 3 * h\nz.backward()\n")
    analysis = analyze_program(program=program, params={"x0": 0.7}, parts=["h.grad"])
    h = 1.4
    without_3h = diagnose_numeric(analysis=analysis, part="h.grad", answer=2 * h, rel_tol=1e-4, abs_tol=1e-6)
    without_square = diagnose_numeric(analysis=analysis, part="h.grad", answer=3.0, rel_tol=1e-4, abs_tol=1e-6)
    assert without_3h.kind == without_square.kind == "missing_path"
    assert "leaves out the route through 3·h" in without_3h.message
    assert "leaves out the route through h·h" in without_square.message


def test_a_chain_factor_forgotten_that_equals_another_gradient_is_told_as_the_factor() -> None:
    """L = (w·x + b - y)²: dL/dw without its x is exactly dL/db. The student forgot the factor x (the edge
    w → mul), a likelier slip than giving b's gradient, which stays mentioned."""
    program = ("w = torch.tensor(0.5, requires_grad=True)\nb = torch.tensor(0.2, requires_grad=True)\n"
               "L = (w * 3.0 + b - 1.0) ** 2\nL.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["w.grad", "b.grad"])
    diagnosis = diagnose_numeric(analysis=analysis, part="w.grad", answer=2 * (0.5 * 3.0 + 0.2 - 1.0),
                                 rel_tol=1e-4, abs_tol=1e-6)
    assert (diagnosis.kind, diagnosis.detail["rule"], diagnosis.detail["edge"]) == (
        "wrong_local_derivative", "generic_one", ["w", "mul"])
    assert "other_gradient" in diagnosis.also
