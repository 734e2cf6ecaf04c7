"""A misconception is about a rule: a student who believes tanh′ = 1 + tanh² uses it at every tanh
(both steps of an unrolled RNN), one who takes σ′ = σ in every layer of an MLP. Each answer below was
told before as "No single mistake explains your answer, but two together do" (two steps) or as unknown
(three layers); it is one belief, found by one re-run of the backward pass, and told once."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from chainrule.analysis.program import analyze_program
from chainrule.diagnosis.across_points import diagnose_points
from chainrule.evaluation_points import evaluation_points

RNN = """w = torch.tensor(w0, requires_grad=True)
u = torch.tensor(u0, requires_grad=True)
h1 = torch.tanh(w * x1)
h2 = torch.tanh(w * x2 + u * h1)
h2.backward()
"""
RNN_PARAMS = {"w0": 0.7, "u0": -1.2, "x1": 0.5, "x2": 1.5}
MLP = """w1 = torch.tensor(a0, requires_grad=True)
w2 = torch.tensor(b0, requires_grad=True)
w3 = torch.tensor(c0, requires_grad=True)
h1 = torch.sigmoid(w1 * x)
h2 = torch.sigmoid(w2 * h1)
h3 = torch.sigmoid(w3 * h2)
h3.backward()
"""
MLP_PARAMS = {"a0": 0.8, "b0": -1.1, "c0": 1.4, "x": 0.9}


def _rnn_w_grad(p: dict[str, float], tanh_prime: Callable[[torch.Tensor], torch.Tensor]) -> float:
    w, u, x1, x2 = (torch.tensor(p[k], dtype=torch.float64) for k in ("w0", "u0", "x1", "x2"))
    h1 = torch.tanh(w * x1)
    h2 = torch.tanh(w * x2 + u * h1)
    return float(tanh_prime(h2) * (x2 + u * tanh_prime(h1) * x1))


def _mlp_a_grad(p: dict[str, float], sigmoid_prime: Callable[[torch.Tensor], torch.Tensor]) -> float:
    a, b, c, x = (torch.tensor(p[k], dtype=torch.float64) for k in ("a0", "b0", "c0", "x"))
    h1 = torch.sigmoid(a * x)
    h2 = torch.sigmoid(b * h1)
    h3 = torch.sigmoid(c * h2)
    return float(sigmoid_prime(h3) * c * sigmoid_prime(h2) * b * sigmoid_prime(h1) * x)


def _diagnosed(program: str, params: dict[str, float], part: str, answer_at: Callable[[dict[str, float]], float],
               vary: list[str]) -> tuple[str, str, dict[str, object]]:
    points = evaluation_points(params=params, ranges={}, count=4, seed="rules", vary=vary)
    analyses = [analyze_program(program=program, params=point, parts=[part]) for point in points]
    found = diagnose_points(analyses=analyses, part=part, answers=[answer_at(point) for point in points],
                            rel_tol=1e-4, abs_tol=1e-6, points=points)
    return found.kind, found.message, found.detail


@pytest.mark.parametrize(("belief", "used"), [
    (lambda t: 1 + t**2, "1 + tanh²"),
    (lambda t: t, "tanh"),
])
def test_one_wrong_tanh_rule_at_both_steps_of_an_rnn_is_one_mistake(belief: Callable[[torch.Tensor], torch.Tensor],
                                                                      used: str) -> None:
    kind, message, detail = _diagnosed(RNN, RNN_PARAMS, "w.grad", lambda p: _rnn_w_grad(p, belief), ["w0", "u0"])
    assert (kind, detail["everywhere"], detail["op"]) == ("wrong_local_derivative", 2, "tanh")
    assert message.startswith(f"Your w.grad uses {used} as the local derivative of tanh, at both of the tanh "
                              "nodes of the program (the edges add → tanh and mul → tanh)")
    assert "where the right one is 1 - tanh²." in message and "two together" not in message


def test_sigma_prime_taken_as_sigma_in_every_layer_is_one_belief() -> None:
    kind, message, detail = _diagnosed(MLP, MLP_PARAMS, "w1.grad", lambda p: _mlp_a_grad(p, lambda s: s),
                                       ["a0", "b0", "c0"])
    assert (kind, detail["everywhere"]) == ("wrong_local_derivative", 3)
    assert message.startswith("Your w1.grad uses σ as the local derivative of sigmoid, at all three of the "
                              "sigmoid nodes of the program (the edge mul → sigmoid at each)")


def test_one_slip_at_one_step_is_still_told_at_its_edge() -> None:
    """Only the second step's tanh′ wrong: a single slip, not a rule held everywhere."""
    def answer(p: dict[str, float]) -> float:
        w, u, x1, x2 = (torch.tensor(p[k], dtype=torch.float64) for k in ("w0", "u0", "x1", "x2"))
        h1 = torch.tanh(w * x1)
        h2 = torch.tanh(w * x2 + u * h1)
        return float((1 + h2**2) * (x2 + u * (1 - h1**2) * x1))

    kind, message, detail = _diagnosed(RNN, RNN_PARAMS, "w.grad", answer, ["w0", "u0"])
    assert kind == "wrong_local_derivative" and "everywhere" not in detail
    assert "(the edge add → tanh)" in message
