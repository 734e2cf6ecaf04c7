"""A code part's words are true of the student's program: ops of the reference's graph that the program
does not have are not named (a forgotten /N is told as the division left out, at the line of the sum it
should follow), and every count of backward() calls is the program's."""

from __future__ import annotations

from chainrule.result import cause_lines
from chainrule.tests.test_code_grading import program_part

LEAVES = "x = torch.tensor(xs, requires_grad=True)\nw = torch.tensor(ws, requires_grad=True)\n"
PARAMS = {"xs": [1.0, 2.0, 0.5], "ws": [0.3, -0.2, 0.7]}


def test_a_forgotten_division_is_told_as_the_op_left_out_at_the_line_of_the_op_before_it() -> None:
    """It was 'counts the path w → mul → sub → pow → sum → div → L three times', about a program with no div."""
    reference = f"{LEAVES}L = ((w * x - 1) ** 2).sum() / 3\nL.backward()\n"
    student = f"{LEAVES}L = ((w * x - 1) ** 2).sum()\nL.backward()\n"
    diagnosis = program_part(reference, student, PARAMS, ["w.grad"])["w.grad"]
    assert (diagnosis.kind, cause_lines(diagnosis.detail)) == ("wrong_local_derivative", [3])
    # told as the division left out at the line of the sum (by the student's graph, or by the words' own check)
    assert diagnosis.message.startswith(("Your program has no division (div) where this exercise has one after the "
                                         "sum on line 3 (`L = ((w * x - 1) ** 2).sum()`)",
                                         "Your loss is not divided by the number of items: line 3 "
                                         "(`L = ((w * x - 1) ** 2).sum()`) sums them"))
    assert "three times" not in diagnosis.message and "local derivative of div" not in diagnosis.message


def test_a_path_through_an_op_the_program_does_not_have_is_told_by_its_ends() -> None:
    reference = f"{LEAVES}L = (w * x).sum() + (w ** 2).sum()\nL.backward()\n"
    student = f"{LEAVES}L = (w * x).sum() - (w ** 2).sum()\nL.backward()\n"
    diagnosis = program_part(reference, student, PARAMS, ["w.grad"])["w.grad"]
    assert diagnosis.kind == "sign_error" and "→ add →" not in diagnosis.message  # the program has no add there
    assert "the path from w to L" in diagnosis.message or (
        "line 3 (`L = (w * x).sum() - (w ** 2).sum()`) uses subtraction (-) where the exercise's computation uses "
        "addition (+)" in diagnosis.message)


def test_a_call_that_does_not_reach_the_tensor_is_counted_and_the_cut_is_named() -> None:
    """'Your program calls backward() once (line 8)' to a program calling it on lines 8 and 9: the second loss
    was detached from W, so only one call filled W.grad."""
    trunk = ("x = torch.tensor(xs)\nW = torch.tensor(ws, requires_grad=True)\nb = torch.ones(3, requires_grad=True)\n"
             "h = torch.tanh(W * x)\nL1 = (h.sum() - 1) ** 2\n")
    reference = f"{trunk}L2 = (b * h ** 2).sum()\nL1.backward(retain_graph=True)\nL2.backward()\n"
    student = f"{trunk}L2 = (b * h.detach() ** 2).sum()\nL1.backward(retain_graph=True)\nL2.backward()\n"
    diagnosis = program_part(reference, student, PARAMS | {"ws": [0.3, -0.2, 0.7]}, ["W.grad"])["W.grad"]
    assert "calls backward() once" not in diagnosis.message
    assert (diagnosis.kind, cause_lines(diagnosis.detail)) == ("missing_path", [6])
    assert diagnosis.message.startswith("Line 6 (`L2 = (b * h.detach() ** 2).sum()`) cuts the gradient")


STE = "x = torch.tensor(xs, requires_grad=True)\nq = x + (torch.round(x * 4) / 4 - x).detach()\nL = (q ** 2).sum()\n" \
    "L.backward()\n"


def test_rounding_without_the_straight_through_term_is_not_told_about_a_detach_it_does_not_have() -> None:
    """It was 'as if detach() stopped all of x's gradient. detach() cuts only the path …' to a program with no
    detach(), and before that 'Nothing in your program cuts the gradient' (true, and not its mistake)."""
    student = "x = torch.tensor(xs, requires_grad=True)\nq = torch.round(x * 4) / 4\nL = (q ** 2).sum()\nL.backward()\n"
    diagnosis = program_part(STE, student, {"xs": [0.3, -1.1, 0.6]}, ["x.grad"])["x.grad"]
    assert diagnosis.kind == "missing_path" and cause_lines(diagnosis.detail) == [2]
    assert "as if detach()" not in diagnosis.message and "Nothing in your program cuts" not in diagnosis.message
    assert diagnosis.message.startswith(("In your program no gradient reaches x",
                                         "Line 2 (`q = torch.round(x * 4) / 4`) rounds"))


def test_the_straight_through_term_without_its_detach_is_told_as_nothing_cut() -> None:
    student = "x = torch.tensor(xs, requires_grad=True)\nq = x + torch.round(x * 4) / 4 - x\nL = (q ** 2).sum()\n" \
        "L.backward()\n"
    diagnosis = program_part(STE, student, {"xs": [0.3, -1.1, 0.6]}, ["x.grad"])["x.grad"]
    assert (diagnosis.kind, diagnosis.detail["code"]["finding"]) == ("extra_path", "no_cut")
    assert diagnosis.message.startswith("Nothing in your program cuts the gradient")
