"""Whole-program misbeliefs as counterfactual re-runs
(kinks ignored, accumulation miscounted, a seed applied twice), and two
mistakes at once only when no single one fits. Every wrong answer here is
computed by hand from the mistake; each was once `unknown`."""

from __future__ import annotations

import math

from chainrule.result import diagnosis_document
from chainrule.tests.program_diagnosis import diagnose

RELU_SQUARED = ("x = torch.tensor(xs)\nw = torch.tensor(ws, requires_grad=True)\nh = w * x\n"
                "L = (torch.relu(h) ** 2).sum()\nL.backward()\n")


def test_a_relu_ignored_in_the_forward_pass_too() -> None:
    # relu taken as the identity everywhere: L = Σ h², dL/dw = 2·h·x = [2·0.5·1, 2·(-0.6)·2]
    diagnosis = diagnose(RELU_SQUARED, {"xs": [1.0, 2.0], "ws": [0.5, -0.3]}, "w.grad", [1.0, -2.4])
    assert (diagnosis.kind, diagnosis.detail["slopes"], diagnosis.detail["edge"]) == (
        "dead_branch", "kinks_both", ["mul", "relu"])
    assert diagnosis_document(diagnosis)["edge"] == ["mul", "relu"]
    assert "forward pass as well as the backward" in diagnosis.message


def test_a_clamp_ignored_in_the_backward_pass() -> None:
    program = "x = torch.tensor(xs, requires_grad=True)\nL = (torch.clamp(x, -1.0, 1.0) * 3).sum()\nL.backward()\n"
    diagnosis = diagnose(program, {"xs": [0.5, 2.0]}, "x.grad", [3.0, 3.0])  # slope 1 also where clamped
    assert (diagnosis.kind, diagnosis.detail["slopes"], diagnosis.detail["edge"]) == (
        "dead_branch", "kinks_backward", ["x", "clamp"])
    assert "clamp passes no gradient where the input lies outside the bounds" in diagnosis.message


def test_both_branches_of_where_given_the_gradient() -> None:
    program = ("x = torch.tensor(xs, requires_grad=True)\ny = torch.where(x > 0, x ** 2, -x)\nL = y.sum()\n"
               "L.backward()\n")
    diagnosis = diagnose(program, {"xs": [1.5, -2.0]}, "x.grad", [2 * 1.5 - 1, 2 * -2.0 - 1])
    assert (diagnosis.kind, diagnosis.detail["slopes"]) == ("dead_branch", "kinks_backward")


LOOP = "w = torch.tensor([w0], requires_grad=True)\nfor x in xs:\n    L = (w * x) ** 2\n    L.backward()\n"
ZEROING_LOOP = ("w = torch.tensor([w0], requires_grad=True)\nfor x in xs:\n    if w.grad is not None:\n"
                "        w.grad.zero_()\n    L = (w * x) ** 2\n    L.backward()\n")
STEPS = {"w0": 1.0, "xs": [1.0, 2.0, 3.0]}  # each call adds 2·w·x²: 2, 8, 18


def test_the_last_backward_call_taken_as_overwriting() -> None:
    diagnosis = diagnose(LOOP, STEPS, "w.grad", 18.0)
    assert (diagnosis.kind, diagnosis.detail["belief"]) == ("accumulation", "last_only")
    assert "never zeroes w.grad" in diagnosis.message


def test_the_backward_calls_averaged() -> None:
    diagnosis = diagnose(LOOP, STEPS, "w.grad", 28.0 / 3)
    assert (diagnosis.kind, diagnosis.detail["belief"]) == ("accumulation", "averaged")


def test_zero_grad_believed_in_the_wrong_place() -> None:
    diagnosis = diagnose(ZEROING_LOOP, STEPS, "w.grad", 26.0)  # zeroed before call 2 instead of every call
    assert (diagnosis.kind, diagnosis.detail["belief"], diagnosis.detail["from_call"]) == (
        "accumulation", "zeroed_before", 2)
    assert "just before call 3, so only the last call counts" in diagnosis.message


def test_a_seed_applied_twice() -> None:
    program = "x = torch.tensor(xs, requires_grad=True)\ny = x ** 2\ny.backward(torch.tensor(v))\n"
    diagnosis = diagnose(program, {"xs": [1.0, 2.0, 3.0], "v": [1.0, 0.5, 2.0]}, "x.grad",
                         [2 * 1.0 * 1.0, 2 * 2.0 * 0.25, 2 * 3.0 * 4.0])
    assert (diagnosis.kind, diagnosis.detail["seed"]) == ("seed_vector", "squared")


def test_a_seed_written_in_the_other_order() -> None:
    """[b, a] for the seed [a, b] was unknown: every output entry weighted by the other's seed entry."""
    program = "x = torch.tensor(xs, requires_grad=True)\ny = x ** 2\ny.backward(torch.tensor(v))\n"
    diagnosis = diagnose(program, {"xs": [1.0, 2.0], "v": [0.5, -1.5]}, "x.grad", [2 * 1.0 * -1.5, 2 * 2.0 * 0.5])
    assert (diagnosis.kind, diagnosis.detail["seed"]) == ("seed_vector", "reversed")
    assert "the seed's entries in the reverse order" in diagnosis.message


RNN = ("w = torch.tensor(w0, requires_grad=True)\nu = torch.tensor(u0, requires_grad=True)\n"
       "h1 = torch.tanh(w * h0 + u * x1)\nL = torch.tanh(w * h1 + u * x2)\nL.backward()\n")
RNN_PARAMS = {"w0": 0.5, "u0": -1.0, "h0": 0.5, "x1": 0.5, "x2": 1.0}


def test_both_tanh_derivatives_taken_as_one_is_one_belief_about_tanh() -> None:
    """It was "No single mistake explains your u.grad, but two together do": one rule, used at both steps."""
    # A linear RNN: L = w·h1 + u·x2 with h1 = w·h0 + u·x1, so dL/du = w·x1 + x2.
    diagnosis = diagnose(RNN, RNN_PARAMS, "u.grad", 0.5 * 0.5 + 1.0)
    assert (diagnosis.kind, diagnosis.detail["rule"], diagnosis.detail["everywhere"]) == (
        "wrong_local_derivative", "generic_one", 2)
    document = diagnosis_document(diagnosis)
    assert document["edge"] == ["add", "tanh"]
    assert document["message"].startswith("Your u.grad uses 1 as the local derivative of tanh, at both of the "
                                          "tanh nodes of the program")
    assert "two together" not in document["message"]


def test_one_mistake_is_preferred_when_it_fits() -> None:
    # Only the outer tanh′ taken as 1: dL/du = x2 + w·(1 - h1²)·x1.
    h1 = math.tanh(0.5 * 0.5 - 1.0 * 0.5)
    diagnosis = diagnose(RNN, RNN_PARAMS, "u.grad", 1.0 + 0.5 * (1 - h1**2) * 0.5)
    assert (diagnosis.kind, diagnosis.detail["edge"], diagnosis.detail["used"]) == (
        "wrong_local_derivative", ["add", "tanh"], "1")


def test_a_missing_path_and_a_wrong_local_derivative_together() -> None:
    program = ("x = torch.tensor(x0, requires_grad=True)\ny = torch.tensor(y0, requires_grad=True)\n"
               "z = x * y + torch.sin(x)\nz.backward()\n")
    # the x·y path left out, and d sin(x)/dx taken as -cos(x)
    diagnosis = diagnose(program, {"x0": 0.8, "y0": 2.0}, "x.grad", -math.cos(0.8))
    assert diagnosis.kind == "two_mistakes"
    mistakes = diagnosis_document(diagnosis)["mistakes"]
    assert [(m["kind"], m["paths"]) for m in mistakes][0] == ("missing_path", [["x", "mul", "add", "z"]])
    assert (mistakes[1]["kind"], mistakes[1]["edge"]) == ("wrong_local_derivative", ["x", "sin"])
    assert "leaves out x → mul → add → z" in diagnosis.message and "-cos(x)" in diagnosis.message
