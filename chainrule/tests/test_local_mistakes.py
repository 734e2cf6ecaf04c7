"""Catalogued wrong local derivatives and the rarer path mistakes, on small
programs beyond the seeds."""

from __future__ import annotations

import json
import math

import pytest

from chainrule import Diagnosis, analyze_program, diagnose_numeric
from chainrule.values import Value


def diagnose(program: str, part: str, answer: Value) -> Diagnosis:
    analysis = analyze_program(program=program, params={"x0": 0.5}, parts=[part])
    return diagnose_numeric(analysis=analysis, part=part, answer=answer, rel_tol=1e-4, abs_tol=1e-6)


def unary(function: str) -> str:
    return f"x = torch.tensor(x0, requires_grad=True)\nu = x * 2\nz = torch.{function}(u)\nz.backward()\n"


def sigmoid(value: float) -> float:
    return 1 / (1 + math.exp(-value))


@pytest.mark.parametrize(
    ("function", "wrong_factor", "used", "right"),
    [
        ("sin", -math.cos(1.0), "-cos(u)", "cos(u)"),
        ("sin", math.sin(1.0), "sin(u)", "cos(u)"),  # the function kept as its own derivative
        ("cos", math.sin(1.0), "sin(u)", "-sin(u)"),
        ("cos", math.cos(1.0), "cos(u)", "-sin(u)"),
        ("tanh", 1 - math.tanh(1.0), "1 - tanh(u)", "1 - tanh²(u)"),
        ("sigmoid", sigmoid(1.0), "σ(u)", "σ(u)·(1 - σ(u))"),
        ("exp", 1.0 * math.exp(0.0), "u·e^(u - 1)", "e^u"),
    ],
)
def test_it_names_the_wrong_local_derivative_of_a_function(
    function: str, wrong_factor: float, used: str, right: str
) -> None:
    diagnosis = diagnose(unary(function), "x.grad", wrong_factor * 2)  # d(2x)/dx = 2 is right
    assert diagnosis.kind == "wrong_local_derivative"
    assert (diagnosis.detail["used"], diagnosis.detail["right"]) == (used, right)
    assert diagnosis.detail["edge"] == ["mul", function]  # node names (contract): u is the mul node
    assert diagnosis.paths == [["x", "mul", function, "z"]]
    assert f"with respect to u (the edge mul → {function})" in diagnosis.message and used in diagnosis.message


@pytest.mark.parametrize(("answer", "used"), [(3 * 0.5, "3·x"), (0.5**2, "x^2"), (3 * 0.5**3, "3·x^3")])
def test_it_knows_the_typical_power_rule_slips(answer: float, used: str) -> None:
    program = "x = torch.tensor(x0, requires_grad=True)\nz = x**3\nz.backward()\n"
    diagnosis = diagnose(program, "x.grad", answer)
    assert diagnosis.kind == "wrong_local_derivative" and diagnosis.detail["used"] == used


def test_it_finds_two_missing_paths_when_three_meet() -> None:
    program = "x = torch.tensor(x0, requires_grad=True)\nz = x * x + torch.sin(x) + 5 * x\nz.backward()\n"
    diagnosis = diagnose(program, "x.grad", 2 * 0.5)  # only the x*x path
    assert diagnosis.kind == "missing_path"
    assert sorted(diagnosis.paths) == [["x", "mul", "add", "z"], ["x", "sin", "add", "add", "z"]]


def test_it_prefers_one_missing_path_over_two() -> None:
    program = "x = torch.tensor(x0, requires_grad=True)\nz = x * x + torch.sin(x) + 5 * x\nz.backward()\n"
    diagnosis = diagnose(program, "x.grad", 1.0 + math.cos(0.5))  # 5·x path missing
    assert diagnosis.paths == [["x", "mul", "add", "z"]]


def test_it_recognises_slope_zero_where_a_relu_is_on() -> None:
    program = "x = torch.tensor([-1.0, 2.0, 3.0], requires_grad=True)\nz = torch.relu(x).sum()\nz.backward()\n"
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    diagnosis = diagnose_numeric(analysis=analysis, part="x.grad", answer=[0.0, 0.0, 0.0])
    assert diagnosis.kind == "dead_branch" and diagnosis.detail["slopes"] == "dead"
    assert "passes the gradient on unchanged" in diagnosis.message


def test_it_serialises_a_diagnosis_to_json() -> None:
    diagnosis = diagnose(unary("sin"), "x.grad", -2 * math.cos(1.0))
    data = json.loads(json.dumps(diagnosis.to_json(), allow_nan=False))
    assert data["kind"] == "wrong_local_derivative"
    assert data["highlight"]["wrong_edges"] == [["op2", "op3"]]
    assert "sign_error" in data["also"]


def test_it_cuts_the_path_through_a_detached_leaf() -> None:
    program = "x = torch.tensor([3.0], requires_grad=True)\nz = x * x.detach()\nz.backward()\n"
    analysis = analyze_program(program=program, params={}, parts=["x.grad"])
    diagnosis = diagnose_numeric(analysis=analysis, part="x.grad", answer=6.0)
    assert (diagnosis.kind, diagnosis.paths) == ("extra_path", [["x", "detach", "mul", "z"]])
    (cut,) = analysis.graph.cut_edges
    assert cut[0] == "leaf:x" and cut in diagnosis.highlight.wrong_edges
    assert analysis.graph.node(cut[1]).name == "detached"  # type: ignore[union-attr]


def test_none_for_a_retained_non_leaf_names_retain_grad_not_requires_grad() -> None:
    """u = w * x with u.retain_grad(): u.grad = None is not 'never tracked'; the message said
    'u has requires_grad=True …, so backward() stores a gradient in u.grad', false without retain_grad()."""
    program = ("w = torch.tensor(x0, requires_grad=True)\nu = w * 3\nu.retain_grad()\nz = torch.tanh(u)\n"
               "z.backward()\n")
    diagnosis = diagnose(program, "u.grad", None)
    assert diagnosis.kind == "untracked_leaf"
    assert "u.retain_grad()" in diagnosis.message and "not a leaf" in diagnosis.message
    assert "requires_grad=True" not in diagnosis.message
    leaf = diagnose(program.replace("u.grad", "w.grad"), "w.grad", None)
    assert "retain_grad" not in leaf.message and "requires_grad=True" in leaf.message


@pytest.mark.parametrize("live", ["c * x", "c * x + x**2"])
def test_zero_beside_a_detach_is_the_detach_taken_to_stop_all_gradient(live: str) -> None:
    """0 with one live path was told so; with two or more it was an unknown with an odd guess."""
    program = (f"x = torch.tensor(x0, requires_grad=True)\nb = x * 2\nc = torch.log(b + x)\n"
               f"z = b.detach() * x + {live}\nz.backward()\n")
    diagnosis = diagnose(program, "x.grad", 0.0)
    assert diagnosis.kind == "missing_path"
    assert "as if detach() stopped all of x's gradient" in diagnosis.message
    assert "detach() cuts only the path that runs through it" in diagnosis.message


@pytest.mark.parametrize(
    ("forward", "answer", "used", "edge"),
    [
        ("torch.sin(2 * x)", math.cos(0.5) * 2, "cos(x)", ["mul", "sin"]),  # cos at x, then the inner 2
        ("torch.log(x ** 2)", (1 / 0.5) * 2 * 0.5, "1/x", ["pow", "log"]),  # 1/x, not 1/x², times 2x
        ("torch.exp(3 * x + 1)", math.exp(0.5) * 3, "e^x", ["add", "exp"]),
        ("torch.exp(3 * x + 1)", math.exp(1.5) * 3, "e^(3·x)", ["add", "exp"]),  # the + 1 dropped from e's power
        ("torch.sqrt(x ** 2 + 1)", 1 / (2 * 0.5) * 2 * 0.5, "1/(2√(x^2))", ["add", "sqrt"]),
        ("torch.tanh(x * x)", (1 - math.tanh(0.5) ** 2) * 2 * 0.5, "1 - tanh²(x)", ["mul", "tanh"]),
    ],
)
def test_the_outer_derivative_taken_at_what_its_input_is_made_from(
    forward: str, answer: float, used: str, edge: list[str]
) -> None:
    """The chain rule's outer factor at the wrong argument: d sin(2x)/dx worked out as cos(x)·2."""
    program = f"x = torch.tensor(x0, requires_grad=True)\nz = {forward}\nz.backward()\n"
    diagnosis = diagnose(program, "x.grad", answer)
    assert diagnosis.kind == "wrong_local_derivative"
    assert diagnosis.detail["used"] == used and diagnosis.detail["edge"] == edge
    assert "the outer derivative at the function's own input" in diagnosis.message


@pytest.mark.parametrize("forward", ["torch.exp(2 * x)", "torch.exp(2 * x) * 3", "torch.exp(2 * x + 1)"])
def test_the_inner_factor_forgotten_under_exp_is_told_as_that_not_as_a_forward_value(forward: str) -> None:
    """d e^(2x)/dx worked out as e^(2x): the commonest slip of all. Without the 2 the answer is z's own value,
    and "you gave a forward value" taught nothing; the factor 1 on x → mul names what to fix."""
    program = f"x = torch.tensor(x0, requires_grad=True)\nz = {forward}\nz.backward()\n"
    z = eval(forward.replace("torch.exp", "math.exp"), {"math": math, "x": 0.5})  # noqa: S307 - our own text
    diagnosis = diagnose(program, "x.grad", z)
    assert (diagnosis.kind, diagnosis.detail["rule"], diagnosis.detail["edge"]) == (
        "wrong_local_derivative", "generic_one", ["x", "mul"])
    assert "where the right one is 2" in diagnosis.message and "forward_value" in diagnosis.also


def test_relu_slope_one_at_exactly_zero_is_not_told_as_a_negative_input() -> None:
    """z = 5·relu(x − 1) + x² at x = 1: relu's input is 0, where torch's slope is 0. 'That ReLU saw a negative
    input' was false; an author may publish such a point with a written justification."""
    program = "x = torch.tensor(x0, requires_grad=True)\nz = 5 * torch.relu(x - 1) + x ** 2\nz.backward()\n"
    at_kink = diagnose_numeric(analysis=analyze_program(program=program, params={"x0": 1.0}, parts=["x.grad"]),
                               part="x.grad", answer=7.0, rel_tol=1e-4, abs_tol=1e-6)  # slope 1 taken at 0
    assert at_kink.kind == "dead_branch" and "input is exactly 0" in at_kink.message
    assert "negative" not in at_kink.message
    below = diagnose(program, "x.grad", 6.0)  # x0 = 0.5: the input is -0.5
    assert below.kind == "dead_branch" and "saw a negative" in below.message


@pytest.mark.parametrize(("part", "answer", "rule"), [
    ("x.grad", 2.0 ** 2, "pow_no_coefficient"),  # x^(y-1): the y not brought down
    ("y.grad", 2.0 ** 2 * math.log(2.0), "exp_lowered"),  # x^(y-1)·ln x: the power rule's drop in the exponent's edge
    ("y.grad", math.log(2.0), "exp_log_only"),
    ("y.grad", 2.0 ** 3 * math.log(3.0), "exp_log_of_exponent"),  # ln y for ln x
])
def test_a_tracked_exponents_power_rule_slips(part: str, answer: float, rule: str) -> None:
    """z = x**y with both tracked, x = 2, y = 3: x^(y-1) was 'unknown', x^(y-1)·ln x a generic ½."""
    program = ("x = torch.tensor(2.0, requires_grad=True)\ny = torch.tensor(3.0, requires_grad=True)\nz = x ** y\n"
               "z.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=[part])
    diagnosis = diagnose_numeric(analysis=analysis, part=part, answer=answer, rel_tol=1e-4, abs_tol=1e-6)
    assert (diagnosis.kind, diagnosis.detail["rule"]) == ("wrong_local_derivative", rule)


def test_a_broadcast_scalars_unsummed_copies_are_told_to_be_added() -> None:
    """w·x + b with a scalar w over 3 entries: the 3 per-entry gradients given as w.grad. Only 'wrong shape'
    was said; the entries are right, they have to be summed."""
    program = ("x = torch.tensor([1.0, -2.0, 3.0])\nw = torch.tensor(0.5, requires_grad=True)\n"
               "L = ((w * x + 0.1) ** 2).sum()\nL.backward()\n")
    per_entry = [2 * (0.5 * x + 0.1) * x for x in (1.0, -2.0, 3.0)]
    analysis = analyze_program(program=program, params={}, parts=["w.grad"])
    diagnosis = diagnose_numeric(analysis=analysis, part="w.grad", answer=per_entry, rel_tol=1e-4, abs_tol=1e-6)
    assert diagnosis.kind == "shape" and "gradients of its copies: add them up" in diagnosis.message
    other = diagnose_numeric(analysis=analysis, part="w.grad", answer=[1.0, 2.0, 3.0], rel_tol=1e-4, abs_tol=1e-6)
    assert other.kind == "shape" and "add them up" not in other.message
