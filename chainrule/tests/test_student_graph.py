"""The student's own graph compared with the exercise's: custom Functions, higher order, hooks, seeds,
ops, and raised errors told at the line that causes them. Each program below got, before, `unknown`,
words untrue of its code (a mean it has not, a `stack` for a swapped seed) or its error where it surfaced."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chainrule.answers.code_grading import grade_code
from chainrule.code.harness import run_harness
from chainrule.diagnosis.numeric import Diagnosis
from chainrule.evaluation_points import evaluation_points
from chainrule.result import cause_lines
from chainrule.tests.point_analyses import analyses_at
from chainrule.tests.test_code_grading import TOLERANCES, program_part

PARAMS = {"x0": 1.5, "x1": -0.5}


def graded(reference: str, source: str, part: str = "x.grad") -> Diagnosis:
    return program_part(reference, source, PARAMS, [part])[part]


def told(diagnosis: Diagnosis, kind: str, lines: list[int], *words: str) -> None:
    assert (diagnosis.correct, diagnosis.kind, cause_lines(diagnosis.detail)) == (False, kind, lines), \
        diagnosis.message
    for text in words:
        assert text in diagnosis.message


CUBE = """class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * grad_output


x = torch.tensor([x0, x1], requires_grad=True)
y = Cube.apply(x)
(y * torch.tensor([1.0, 2.0])).sum().backward()
"""


def test_a_right_custom_function_is_right() -> None:
    assert graded(CUBE, CUBE).correct


@pytest.mark.parametrize(("change", "finding", "lines", "words"), [
    (("3 * x ** 2 * grad_output", "3 * x ** 2"), "ignores_grad_output", [10],
     ["Cube.backward ignores grad_output: line 10 (`return 3 * x ** 2`)"]),
    (("3 * x ** 2 * grad_output", "2 * x * grad_output"), "wrong_derivative", [10],
     ["not the derivative of your own Cube.forward"]),
    (("ctx.save_for_backward(x)\n        return x ** 3",
      "y = x ** 3\n        ctx.save_for_backward(y)\n        return y"), "saved_output", [5, 11],
     ["Cube.forward saves its output (line 5", "ctx.save_for_backward(x)"]),
])
def test_a_custom_backward_is_checked_against_its_own_forward(change: tuple[str, str], finding: str,
                                                             lines: list[int], words: list[str]) -> None:
    diagnosis = graded(CUBE, CUBE.replace(*change))
    told(diagnosis, "custom_function", lines, *words)
    assert diagnosis.detail["code"]["finding"] == finding


def test_a_backward_ignoring_grad_output_fails_even_where_the_seed_hides_it() -> None:
    """With a loss of y.sum() grad_output is ones and the values come out right: the backward is still wrong."""
    reference = CUBE.replace("(y * torch.tensor([1.0, 2.0])).sum()", "y.sum()")
    diagnosis = graded(reference, reference.replace("3 * x ** 2 * grad_output", "3 * x ** 2"))
    told(diagnosis, "custom_function", [10], "ignores grad_output")


def test_two_gradients_for_one_input_is_told_at_the_return_of_backward() -> None:
    diagnosis = graded(CUBE, CUBE.replace("return 3 * x ** 2 * grad_output", "return 3 * x ** 2 * grad_output, x"))
    told(diagnosis, "custom_function", [10], "Your code raised RuntimeError",
         "Cube.backward returns 2 gradients on line 10", "takes 1 input after ctx")


ROUND = """class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


x = torch.tensor([x0, x1], requires_grad=True)
y = (RoundSTE.apply(x * 3) ** 2).sum()
y.backward()
"""


def test_a_straight_through_backward_is_the_authors_intent_not_a_wrong_derivative() -> None:
    assert graded(ROUND, ROUND).correct
    diagnosis = graded(ROUND, ROUND.replace("return grad_output\n", "return grad_output * 0.5\n"))
    told(diagnosis, "custom_function", [8], "Your RoundSTE.backward (line 8")


def test_rounding_without_a_straight_through_names_the_rounding_line() -> None:
    student = "x = torch.tensor([x0, x1], requires_grad=True)\ny = (torch.round(x * 3) ** 2).sum()\ny.backward()\n"
    diagnosis = graded(ROUND, student)
    told(diagnosis, "missing_path", [2], "Line 2 (`y = (torch.round(x * 3) ** 2).sum()`) rounds")
    assert "Nothing in your program cuts" not in diagnosis.message


PENALTY = """x = torch.tensor([x0, x1], requires_grad=True)
y = (x ** 3).sum()
(g,) = torch.autograd.grad(y, x, create_graph=True)
penalty = (g ** 2).sum()
penalty.backward()
"""


@pytest.mark.parametrize("flag", ["", ", retain_graph=True"])
def test_create_graph_missing_is_told_at_the_grad_call_not_the_backward(flag: str) -> None:
    diagnosis = graded(PENALTY, PENALTY.replace(", create_graph=True", flag))
    told(diagnosis, "higher_order", [3], "line 3 (`(g,) = torch.autograd.grad(y, x",
         "without create_graph=True", "(line 5: penalty.backward())")
    assert ("retain_graph=True there only keeps the graph alive" in diagnosis.message) == bool(flag)


def test_create_graph_missing_where_nothing_raises_is_named_too() -> None:
    reference = PENALTY.replace("penalty.backward()", "(y + penalty).backward()")
    diagnosis = graded(reference, reference.replace("create_graph=True", "retain_graph=True"))
    told(diagnosis, "higher_order", [3], "Line 3 (`(g,) = torch.autograd.grad(y, x, retain_graph=True)`)")
    assert graded(reference, reference).correct


HOOKED = """x = torch.tensor([x0, x1], requires_grad=True)
h = x * 2
h.register_hook(lambda g: g.clamp(max=1.0))
y = (h ** 3).sum()
y.backward()
"""


def test_a_hook_that_returns_nothing_is_named_at_its_line() -> None:
    diagnosis = graded(HOOKED, HOOKED.replace("lambda g: g.clamp(max=1.0)", "lambda g: print(g)"))
    told(diagnosis, "hook", [3], "The hook registered on line 3", "returns nothing")


def test_a_hook_registered_after_backward_is_named_at_its_line() -> None:
    lines = HOOKED.splitlines()
    student = "\n".join([lines[0], lines[1], lines[3], lines[4], lines[2]]) + "\n"
    told(graded(HOOKED, student), "hook", [5], "Line 5 (`h.register_hook(", "after the backward() on line 4")


def test_a_hook_on_the_wrong_tensor_is_named_at_its_line() -> None:
    student = HOOKED.replace("h.register_hook", "x.register_hook")
    told(graded(HOOKED, student), "hook", [3], "registers the hook on x", "this exercise's hook is on h")


SEEDED = """x = torch.tensor([x0, x1], requires_grad=True)
y = torch.stack([x[0] * x[1], x[0] + 3 * x[1]])
v = torch.tensor([1.0, 2.0])
y.backward(v)
"""


def test_a_seed_with_swapped_entries_is_a_seed_mistake_at_its_lines_not_stack() -> None:
    diagnosis = graded(SEEDED, SEEDED.replace("[1.0, 2.0]", "[2.0, 1.0]"))
    told(diagnosis, "seed_vector", [3, 4], "on line 4 (`y.backward(v)`), made on line 3", "another order")
    assert "stack" not in diagnosis.message


MEAN = """x = torch.tensor([x0, x1], requires_grad=True)
w = torch.tensor([1.0, 2.0, 3.0])
loss = ((x.sum() * w - 1) ** 2).mean()
loss.backward()
"""


@pytest.mark.parametrize("reference", [MEAN, MEAN.replace(".mean()", ".sum() / 3")])
def test_a_sum_where_the_exercise_averages_is_named_without_an_op_the_student_lacks(reference: str) -> None:
    diagnosis = graded(reference, MEAN.replace(".mean()", ".sum()"))
    told(diagnosis, "wrong_local_derivative", [3],
         "Your loss is not divided by the number of items: line 3", "3 times too large")
    assert "mean with respect" not in diagnosis.message and "→ div" not in diagnosis.message


def test_a_leaf_remade_in_a_loop_is_told_at_its_assignment() -> None:
    reference = """A = torch.tensor([x0, x1], requires_grad=True)
for step in range(3):
    loss = (A ** 2).sum()
    loss.backward()
    with torch.no_grad():
        A -= 0.1 * A.grad
    A.grad.zero_()
"""
    student = """A = torch.tensor([x0, x1], requires_grad=True)
for step in range(3):
    loss = (A ** 2).sum()
    loss.backward()
    A = A - 0.1 * A.grad
"""
    diagnosis = graded(reference, student, "A.grad")
    told(diagnosis, "untracked_leaf", [5], "A the result of an operation, not a leaf", "torch.no_grad()")


def test_data_in_the_forward_pass_is_told_at_that_line_not_at_the_type_error() -> None:
    reference = """x = torch.tensor([x0, x1], requires_grad=True)
w = torch.tensor([2.0, 1.0], requires_grad=True)
y = (x * w).sum()
y.backward()
g = x.grad * 2
"""
    diagnosis = graded(reference, reference.replace("(x * w)", "(x.data * w)"))
    told(diagnosis, "missing_path", [3], "TypeError", "The cause is line 3 (`y = (x.data * w).sum()`): .data")


def forged_graph(graph: dict[str, Any]) -> dict[str, Diagnosis]:
    points = evaluation_points(params=PARAMS, ranges={}, count=4, seed="student-7/program")
    report = json.loads(json.dumps(run_harness({"mode": "program", "source": CUBE, "reads": ["x.grad"],
                                                "points": points})))
    for point in report["points"]:
        point["trace"]["graph"] = graph
    analyses = analyses_at(CUBE, points, ["x.grad"])
    return grade_code(harness_output=report, analyses=analyses, points=points, parts=["x.grad"], returns=None,
                      source=CUBE, **TOLERANCES)


@pytest.mark.parametrize("graph", [
    {"ops": [{"op": "mul", "line": 99, "count": 1}]},  # a line the source does not have
    {"functions": [{"name": "Cube", "verdict": "perfect", "input": None, "expected": None, "got": None}]},
    {"calls": [{"kind": "backward", "line": 3, "create_graph": False, "retain_graph": False,
                "seed": [float("nan")], "seed_line": None}]},
    {"hooks": [{"line": 3, "tensor": "not a name", "before_call": 0, "calls": 0, "returned": 0}] },
    {"ops": [{"op": "mul", "line": 3, "count": 1}] * 65},
])
def test_a_malformed_graph_rejects_the_report(graph: dict[str, Any]) -> None:
    assert forged_graph(graph)["x.grad"].detail["reason"] == "malformed_output"


def test_a_forged_graph_can_fail_a_right_program_but_never_pass_a_wrong_one() -> None:
    wrong = {"functions": [{"name": "Cube", "verdict": "wrong_derivative", "input": 0, "expected": None, "got": None}]}
    assert forged_graph(wrong)["x.grad"].kind == "custom_function"
    assert forged_graph({"functions": [{"name": "Cube", "verdict": "right", "input": None, "expected": None,
                                        "got": None}]})["x.grad"].correct  # the values decide


TWO_HEADS = """x = torch.tensor([x0, x1])
W = torch.tensor([[1.0, -0.5], [0.25, 2.0]], requires_grad=True)
b = torch.tensor([0.5, -1.0], requires_grad=True)
h = torch.tanh(W @ x)
L1 = (h.sum() - 1) ** 2
L2 = ((b * h).sum() * 3) ** 2
L1.backward(retain_graph=True)
L2.backward()
"""


def test_a_cut_the_exercise_does_not_have_is_named_not_a_call_count_the_student_does_not_make() -> None:
    diagnosis = graded(TWO_HEADS, TWO_HEADS.replace("(b * h)", "(b * h.detach())"), "W.grad")
    told(diagnosis, "missing_path", [6], "Line 6 (`L2 = ((b * h.detach()).sum() * 3) ** 2`) cuts the ")
    assert "calls backward() once" not in diagnosis.message


def test_a_freed_graph_has_its_cause_line_the_backward_without_retain_graph() -> None:
    student = TWO_HEADS.replace("L1.backward(retain_graph=True)\nL2.backward()",
                                "L1.backward()\nL2.backward(retain_graph=True)")
    diagnosis = graded(TWO_HEADS, student, "W.grad")
    assert (diagnosis.kind, cause_lines(diagnosis.detail)) == ("code_error", [7])


def test_a_sign_flipped_where_the_numbers_see_it_is_placed_at_the_students_line() -> None:
    reference = "x = torch.tensor([x0, x1], requires_grad=True)\nu = (x ** 2).sum()\nL = u + 3 * x.sum()\n" \
        "L.backward()\n"
    diagnosis = graded(reference, reference.replace("u + 3", "u - 3"))
    told(diagnosis, "sign_error", [3], "line 3 (`L = u - 3 * x.sum()`) uses subtraction (-) where the exercise's "
         "computation uses addition (+) at that step")
    assert "→ add →" not in diagnosis.message  # the student's line has no add


def test_a_factor_forgotten_is_told_as_the_op_the_line_lacks_not_a_derivative_it_has_right() -> None:
    reference = ("x = torch.tensor([x0, x1], requires_grad=True)\ng = (x ** 2 - 1) ** 2\n"
                 "L = x.sum() + 0.5 * g.sum()\nL.backward()\n")
    diagnosis = graded(reference, reference.replace("0.5 * g.sum()", "g.sum()"))
    assert cause_lines(diagnosis.detail) == [3] and not diagnosis.correct
    assert "line 3 (`L = x.sum() + g.sum()`) has no multiplication (*)" in diagnosis.message
    assert "power rule" not in diagnosis.message


def test_a_python_number_in_the_middle_names_its_line() -> None:
    reference = "x = torch.tensor([x0, x1], requires_grad=True)\nn = x.norm()\nL = x.sum() + (n - 1) ** 2\n" \
        "L.backward()\n"
    diagnosis = graded(reference, reference.replace("x.norm()", "x.norm().item()"))
    assert (diagnosis.kind, cause_lines(diagnosis.detail)) == ("missing_path", [2])
    assert "The path stops at line 2 (`n = x.norm().item()`)" in diagnosis.message


CLAMP = """class MyClamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        inside = (x > ctx.lo) & (x < ctx.hi)
        return grad_output * inside, None, None


x = torch.tensor([x0, x1], requires_grad=True)
(MyClamp.apply(x * 0.5, -1.0, 1.0) ** 2).sum().backward()
"""


def test_a_custom_backward_names_the_lines_that_compute_what_it_returns() -> None:
    diagnosis = graded(CLAMP, CLAMP.replace("inside = (x > ctx.lo) & (x < ctx.hi)", "inside = (x < ctx.lo)"))
    told(diagnosis, "custom_function", [11, 12], "MyClamp.backward returns, on line 12")


def test_gradients_returned_out_of_order_are_told_at_the_return() -> None:
    diagnosis = graded(CLAMP, CLAMP.replace("return grad_output * inside, None, None",
                                            "return None, grad_output * inside, None"))
    told(diagnosis, "custom_function", [12], "returns a gradient in position 2", "where MyClamp.forward's input is lo")


QUANTISED = """x = torch.tensor([x0, x1], requires_grad=True)
q = x + (torch.round(x * 4) / 4 - x).detach()
L = ((q - 0.3) ** 2).sum()
L.backward()
"""


def test_a_straight_through_function_that_ignores_grad_output_is_named() -> None:
    student = """class Quantise(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x * 4) / 4

    @staticmethod
    def backward(ctx, grad_output):
        return torch.ones_like(grad_output)


x = torch.tensor([x0, x1], requires_grad=True)
q = Quantise.apply(x)
L = ((q - 0.3) ** 2).sum()
L.backward()
"""
    told(graded(QUANTISED, student), "custom_function", [8], "Quantise.backward ignores grad_output")


def test_rounding_where_the_exercise_passes_the_gradient_around_it_is_named_not_nothing_cuts() -> None:
    student = QUANTISED.replace("x + (torch.round(x * 4) / 4 - x).detach()", "torch.round(x * 4) / 4")
    diagnosis = graded(QUANTISED, student)
    told(diagnosis, "missing_path", [2], "Line 2 (`q = torch.round(x * 4) / 4`) rounds", "straight-through")
    assert "Nothing in your program cuts" not in diagnosis.message


def test_a_gradient_detached_after_create_graph_is_a_higher_order_mistake_at_the_detach() -> None:
    reference = """x = torch.tensor([x0, x1], requires_grad=True)
v = torch.tensor([1.0, -2.0])
(g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
(g @ v).backward()
"""
    diagnosis = graded(reference, reference.replace("(g @ v)", "(g.detach() @ v)"))
    told(diagnosis, "higher_order", [4], "takes detach() of g, which create_graph=True on line 3")


def test_a_constant_changed_on_a_line_is_that_line() -> None:
    reference = ("x = torch.tensor([x0, x1], requires_grad=True)\nrec = (x ** 2).sum()\n"
                 "kl = -0.5 * torch.sum(1 + x - x.exp())\nL = rec + kl\nL.backward()\n")
    diagnosis = graded(reference, reference.replace("-0.5 *", "0.5 *"))
    assert not diagnosis.correct and cause_lines(diagnosis.detail) == [3]


def test_one_line_weighted_otherwise_is_a_wrong_factor_at_that_line() -> None:
    reference = """w = torch.tensor([x0, x1], requires_grad=True)
for xs, n in (([1.0, 2.0, 0.5], 3), ([-1.0], 1)):
    X = torch.tensor(xs)
    L = ((X * w.sum() - 1) ** 2).mean() * n / 4
    L.backward()
"""
    diagnosis = graded(reference, reference.replace(" * n / 4", " / 2"), "w.grad")
    told(diagnosis, "wrong_local_derivative", [4], "line 4 (`L = ((X * w.sum() - 1) ** 2).mean() / 2`)")


def test_a_gradient_reversal_under_another_name_is_not_judged_by_its_forward() -> None:
    reference = """class Reverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad_output):
        return -grad_output


x = torch.tensor([x0, x1], requires_grad=True)
(Reverse.apply(x) ** 2).sum().backward()
"""
    assert graded(reference, reference.replace("Reverse", "Flip")).correct


def test_the_gradients_of_two_inputs_returned_in_each_others_place_are_named() -> None:
    reference = """class Mul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, alpha):
        ctx.save_for_backward(a, b)
        ctx.alpha = alpha
        return alpha * a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return ctx.alpha * g * b, ctx.alpha * g * a, None


x = torch.tensor([x0, x1], requires_grad=True)
w = torch.tensor([2.0, -1.0], requires_grad=True)
(Mul.apply(x, w, 3.0) ** 2).sum().backward()
"""
    assert graded(reference, reference).correct
    student = reference.replace("return ctx.alpha * g * b, ctx.alpha * g * a",
                                "return ctx.alpha * g * a, ctx.alpha * g * b")
    told(graded(reference, student), "custom_function", [11], "Mul.backward returns the gradients in the wrong order")


def test_a_term_left_out_names_no_line_that_is_the_same_as_the_exercises() -> None:
    reference = """w = torch.tensor([x0, x1], requires_grad=True)
X = torch.tensor([[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]])
mse = ((X @ w - 1) ** 2).mean()
loss = mse + 0.01 * (w ** 2).sum()
loss.backward()
"""
    diagnosis = graded(reference, reference.replace("mse + 0.01 * (w ** 2).sum()", "mse"), "w.grad")
    assert not diagnosis.correct and 3 not in cause_lines(diagnosis.detail)
    assert "line 3" not in diagnosis.message


def test_the_graph_is_recorded_at_the_first_point_only() -> None:
    """Each point's report stays small: the worker compares the graph at the first point."""
    points = evaluation_points(params=PARAMS, ranges={}, count=4, seed="student-7/program")
    report = run_harness({"mode": "program", "source": CUBE, "reads": ["x.grad"], "points": points})
    graphs = [point["trace"].get("graph") for point in report["points"]]
    assert graphs[0]["functions"][0]["verdict"] == "right" and graphs[1:] == [None] * (len(points) - 1)


def test_a_function_clipping_its_gradient_where_the_exercise_uses_a_hook_is_right() -> None:
    reference = """x = torch.tensor([x0, x1], requires_grad=True)
h = x * 3
h.register_hook(lambda g: g.clamp(-1.0, 1.0))
(h ** 2).sum().backward()
"""
    student = """class Clip(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h):
        return h.clone()

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.clamp(-1.0, 1.0)


x = torch.tensor([x0, x1], requires_grad=True)
h = Clip.apply(x * 3)
(h ** 2).sum().backward()
"""
    assert graded(reference, student).correct
