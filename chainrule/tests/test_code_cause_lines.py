"""A code part's `lines` are where the student's mistake is, not where it surfaced: the backward() that
freed the graph (not the later one that raised), the no_grad rebinding in a loop (not the backward of the
next step), the detach() that left a leaf unreached (not the line creating the data), the calls that add
up unreset, and, for a mistake the numbers find, the line where the program departs from the exercise's."""

from __future__ import annotations

import json
from typing import Any

from chainrule import Diagnosis
from chainrule.answers.code_grading import grade_code
from chainrule.code.harness import run_harness
from chainrule.evaluation_points import evaluation_points
from chainrule.result import cause_lines
from chainrule.tests.point_analyses import analyses_at
from chainrule.tests.test_code_grading import TOLERANCES

SGD = ("X = torch.tensor(X0)\ny = torch.tensor(y0)\nw = torch.tensor(w0, requires_grad=True)\n"
       "for step in range(2):\n    if w.grad is not None:\n        w.grad.zero_()\n"
       "    L = ((X @ w - y) ** 2).mean()\n    L.backward()\n    with torch.no_grad():\n        w -= 0.1 * w.grad\n")
SGD_PARAMS: dict[str, Any] = {"X0": [[1.0, 2.0], [0.5, -1.0]], "y0": [1.0, 0.0], "w0": [0.3, -0.4]}


def graded(reference: str, source: str, params: dict[str, Any], part: str) -> Diagnosis:
    points = evaluation_points(params=params, ranges={}, count=3, seed="lines", vary=[])
    report = json.loads(json.dumps(run_harness({"mode": "fix", "source": source, "reads": [part],
                                                "points": points})))
    return grade_code(harness_output=report, analyses=analyses_at(reference, points, [part]), points=points,
                      parts=[part], returns=None, source=source, reference_source=reference, **TOLERANCES)[part]


def test_a_second_backward_that_fails_is_caused_by_the_first_that_freed_the_graph() -> None:
    reference = "x = torch.tensor([x0], requires_grad=True)\ny = x**2\ny.backward(retain_graph=True)\ny.backward()\n"
    source = "x = torch.tensor([x0], requires_grad=True)\ny = x**2\ny.backward()\ny.backward(retain_graph=True)\n"
    diagnosis = graded(reference, source, {"x0": 2.0}, "x.grad")
    assert (diagnosis.kind, cause_lines(diagnosis.detail)) == ("code_error", [3])


def test_a_leaf_rebound_under_no_grad_in_a_loop_is_the_cause_not_the_next_backward() -> None:
    source = SGD.replace("        w -= 0.1 * w.grad\n", "        w = w - 0.1 * w.grad\n")
    diagnosis = graded(SGD, source, SGD_PARAMS, "w.grad")
    assert (diagnosis.kind, cause_lines(diagnosis.detail)) == ("code_error", [9, 10])  # the block and the rebinding


def test_calls_that_add_up_unreset_are_the_lines_of_a_loop_that_never_zeroes() -> None:
    source = SGD.replace("    if w.grad is not None:\n        w.grad.zero_()\n", "")
    diagnosis = graded(SGD, source, SGD_PARAMS, "w.grad")
    assert (diagnosis.kind, diagnosis.detail["code"]["finding"], cause_lines(diagnosis.detail)) == (
        "accumulation", "never_reset", [6])


def test_a_detach_that_leaves_a_leaf_unreached_is_told_at_its_line_not_at_the_data() -> None:
    """It was 'The graph stops at line 1 (`x = torch.tensor(xs)`): a Python number … made from a value'."""
    reference = "x = torch.tensor(xs)\nW = torch.tensor(W0, requires_grad=True)\nL = (W @ x).sum()\nL.backward()\n"
    source = "x = torch.tensor(xs)\nW = torch.tensor(W0, requires_grad=True)\nL = (W.detach() @ x).sum()\n" \
        "L2 = L + (x * 0).sum()\nL2.requires_grad_(True)\nL2.backward()\n"
    diagnosis = graded(reference, source, {"xs": [1.0, 2.0], "W0": [[0.5, -1.0], [2.0, 0.25]]}, "W.grad")
    assert cause_lines(diagnosis.detail) == [3]
    assert diagnosis.message.startswith("Line 3 (`L = (W.detach() @ x).sum()`) cuts the ")
    assert "torch.tensor(xs)" not in diagnosis.message


def test_a_mistake_the_numbers_find_is_at_the_line_where_the_program_departs_from_the_exercise() -> None:
    reference = "x = torch.tensor(xs, requires_grad=True)\nw = torch.tensor(ws, requires_grad=True)\n" \
        "a = (w * x).sum()\nL = a + (w ** 2).sum()\nL.backward()\n"
    source = reference.replace("L = a + (w ** 2).sum()", "L = a - (w ** 2).sum()")
    diagnosis = graded(reference, source, {"xs": [1.0, 2.0], "ws": [0.3, -0.2]}, "w.grad")
    assert (diagnosis.kind, cause_lines(diagnosis.detail)) == ("sign_error", [4])


def test_a_graph_lost_under_no_grad_names_the_block_and_the_op() -> None:
    reference = "x = torch.tensor(xs, requires_grad=True)\ny = (x * 2).sum()\ny.backward()\n"
    source = "x = torch.tensor(xs, requires_grad=True)\nwith torch.no_grad():\n    y = (x * 2).sum()\ny.backward()\n"
    diagnosis = graded(reference, source, {"xs": [1.0, 2.0]}, "x.grad")
    assert (diagnosis.kind, cause_lines(diagnosis.detail)) == ("code_error", [2, 3])


def test_autograd_grad_by_an_untracked_tensor_is_caused_where_that_tensor_is_made() -> None:
    reference = "x = torch.tensor(xs, requires_grad=True)\nw = torch.tensor(ws, requires_grad=True)\n" \
        "out = (w * x).sum()\n(g,) = torch.autograd.grad(out, x, create_graph=True)\nL = (g ** 2).sum()\nL.backward()\n"
    source = reference.replace("x = torch.tensor(xs, requires_grad=True)", "x = torch.tensor(xs)")
    diagnosis = graded(reference, source, {"xs": [1.0, 2.0], "ws": [0.5, -1.0]}, "w.grad")
    assert (diagnosis.kind, cause_lines(diagnosis.detail)) == ("code_error", [1])
