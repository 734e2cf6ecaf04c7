"""A right program is right however it gets there; only a requirement the part's config states
(backward_calls, forbid) refuses right values, and the feedback quotes it at the student's line.
Each program below got 0 points before: `accumulation` ("Keep one backward() per loss, as it asks",
which no prompt asked) or `not_autograd` for autograd's own results summed from a zero start."""

from __future__ import annotations

import json

import pytest

from chainrule import Diagnosis
from chainrule.answers.code_grading import grade_code
from chainrule.answers.code_requirements import Requirements
from chainrule.code.harness import run_harness
from chainrule.evaluation_points import evaluation_points
from chainrule.result import cause_lines
from chainrule.tests.point_analyses import analyses_at
from chainrule.tests.test_code_grading import TOLERANCES

LEAF = "x = torch.tensor([x0], requires_grad=True)\n"
TWO_CALLS = f"{LEAF}y = x**2\ny.backward(retain_graph=True)\ny.backward()\n"


def graded(source: str, requirements: Requirements | None = None, reference: str = TWO_CALLS) -> Diagnosis:
    points = evaluation_points(params={"x0": 2.0}, ranges={}, count=3, seed="student-3/program")
    report = json.loads(json.dumps(run_harness({"mode": "program", "source": source, "reads": ["x.grad"],
                                                "points": points})))
    return grade_code(harness_output=report, analyses=analyses_at(reference, points, ["x.grad"]), points=points,
                      parts=["x.grad"], returns=None, source=source, requirements=requirements,
                      **TOLERANCES)["x.grad"]


RIGHT_PROGRAMS: dict[str, str] = {
    "one backward of the summed losses": f"{LEAF}y = x**2\n(y + y).backward()\n",
    "autograd.grad into a zeros_like accumulator": (
        f"{LEAF}y = x**2\nacc = torch.zeros_like(x)\nfor _ in range(2):\n"
        "    acc += torch.autograd.grad(y, x, retain_graph=True)[0]\nx.grad = acc\n"),
    "autograd.grad added to a zeros accumulator": (
        f"{LEAF}y = x**2\ntotal = torch.zeros(1)\nfor _ in range(2):\n"
        "    total = total + torch.autograd.grad(y, x, retain_graph=True)[0]\nx.grad = total\n"),
    "Python's sum of autograd.grad results": (
        f"{LEAF}y = x**2\ngs = [torch.autograd.grad(y, x, retain_graph=True)[0] for _ in range(2)]\n"
        "x.grad = sum(gs)\n"),
    "a hook that doubles the gradient": f"{LEAF}x.register_hook(lambda g: 2 * g)\ny = x**2\ny.backward()\n",
    "four calls of half the loss": (f"{LEAF}y = x**2\nfor _ in range(4):\n    (y / 2).backward(retain_graph=True)\n"),
}


@pytest.mark.parametrize("case", list(RIGHT_PROGRAMS))
def test_a_program_that_leaves_the_gradient_through_autograd_is_right(case: str) -> None:
    diagnosis = graded(RIGHT_PROGRAMS[case])
    assert diagnosis.correct, diagnosis.message


def test_a_zero_start_does_not_make_numbers_typed_in_autograd() -> None:
    source = f"{LEAF}y = x**2\nacc = torch.zeros_like(x)\nacc[0] = 4 * x0\nacc += torch.autograd.grad(y, x)[0]\n" \
        "x.grad = acc\n"
    assert graded(source).kind == "not_autograd"


def test_a_stated_number_of_backward_calls_refuses_right_values_and_quotes_it_at_the_line() -> None:
    diagnosis = graded(f"{LEAF}y = x**2\n(y + y).backward()\n", Requirements(backward_calls=2))
    assert (diagnosis.correct, diagnosis.kind) == (False, "requirement")
    assert diagnosis.message == (
        "Your values are right, but this exercise states a requirement your program does not meet: it asks you to "
        "call backward() exactly twice, and your program calls backward() once (line 3). Make one backward() call "
        "per step, as it asks: .grad accumulates, and the exercise is about each call adding its gradient to what "
        "is already there.")
    assert cause_lines(diagnosis.detail) == [3]


def test_the_stated_calls_are_counted_from_the_source_and_the_loop() -> None:
    assert graded(TWO_CALLS, Requirements(backward_calls=2)).correct
    looped = f"{LEAF}y = x**2\nfor _ in range(2):\n    y.backward(retain_graph=True)\n"
    assert graded(looped, Requirements(backward_calls=2)).correct
    three = f"{LEAF}y = x**2\nfor _ in range(4):\n    (y / 2).backward(retain_graph=True)\n"
    refused = graded(three, Requirements(backward_calls=2))
    assert refused.kind == "requirement" and "calls backward() 4 times (line 4, in a loop)" in refused.message


@pytest.mark.parametrize(("forbidden", "source", "line"), [
    ("torch.autograd.grad", f"{LEAF}y = x**2\n(g,) = torch.autograd.grad(2 * y, x)\nx.grad = g\n", 3),
    ("retain_graph", TWO_CALLS, 3),
    ("detach", f"{LEAF}y = x**2\nc = x.detach()\n(y + y).backward()\n", 3),
])
def test_a_forbidden_construct_is_quoted_at_its_line(forbidden: str, source: str, line: int) -> None:
    diagnosis = graded(source, Requirements(forbid=(forbidden,)))
    assert (diagnosis.correct, diagnosis.kind, cause_lines(diagnosis.detail)) == (False, "requirement", [line])
    assert f"it asks you not to use {forbidden}" in diagnosis.message.replace("retain_graph=True", "retain_graph")
    assert f"line {line} (`" in diagnosis.message


def test_a_wrong_answer_that_breaks_a_requirement_keeps_its_diagnosis_and_is_told_the_requirement() -> None:
    diagnosis = graded(f"{LEAF}y = x**2\ny.backward()\n", Requirements(backward_calls=2))
    assert diagnosis.kind == "accumulation"
    assert diagnosis.message.endswith("Also: it asks you to call backward() exactly twice, and your program calls "
                                      "backward() once (line 3). Make one backward() call per step, as it asks: "
                                      ".grad accumulates, and the exercise is about each call adding its gradient "
                                      "to what is already there.")


def test_a_reference_that_breaks_its_own_requirement_is_caught_for_vetting() -> None:
    from chainrule.answers.code_requirements import reference_breaks

    assert reference_breaks(Requirements(backward_calls=2), TWO_CALLS) is None
    assert reference_breaks(Requirements(backward_calls=1), TWO_CALLS) == (
        "it asks you to call backward() exactly once, and your program calls backward() twice (lines 3 and 4). "
        "Compute the gradients with one backward() call.")
    assert "line 3 (`y.backward(retain_graph=True)`) uses it" in str(
        reference_breaks(Requirements(forbid=("retain_graph",)), TWO_CALLS))
