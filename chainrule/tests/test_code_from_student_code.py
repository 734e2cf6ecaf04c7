"""Program and fix parts diagnosed from what the student's own code does with autograd:
each student program below got, before, a message about the reference's code (a detach()
the student never wrote, "without zeroing" for a student who zeroes) or passed on values typed in."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from chainrule.answers.code_grading import grade_code
from chainrule.code.harness import run_harness
from chainrule.evaluation_points import evaluation_points
from chainrule.tests.point_analyses import analyses_at
from chainrule.tests.seeds import SEEDS
from chainrule.tests.test_code_grading import TOLERANCES, grad_z, program_part

LEAF = "x = torch.tensor([x0], requires_grad=True)\n"


def seed_part(slug: str, source: str) -> dict[str, Any]:
    seed = SEEDS[slug]
    return program_part(seed.program, source, dict(seed.params), [p for p in seed.parts if p.endswith(".grad")])


@pytest.mark.parametrize(("reset", "verb"), [("x.grad.zero_()", "zeroes x.grad"),
                                             ("x.grad = None", "sets x.grad to None")])
def test_zeroing_between_the_calls_is_named_on_the_students_line(reset: str, verb: str) -> None:
    student = f"{LEAF}y = x**2\ny.backward(retain_graph=True)\n{reset}\ny.backward()\n"
    diagnosis = seed_part("accumulation", student)["x.grad"]
    assert (diagnosis.kind, diagnosis.detail["code"]["finding"]) == ("accumulation", "reset_between")
    assert f"Line 4 (`{reset}`) {verb} between the backward() calls on lines 3 and 5" in diagnosis.message
    assert "only the last call's gradient" in diagnosis.message
    assert "without zeroing" not in diagnosis.message  # the student did zero: that is the mistake


def test_one_backward_call_where_the_exercise_makes_two_is_counted_from_the_code() -> None:
    diagnosis = seed_part("accumulation", f"{LEAF}y = x**2\ny.backward()\n")["x.grad"]
    assert diagnosis.kind == "accumulation"
    assert diagnosis.message.startswith("Your program calls backward() once (line 3), but this exercise calls it twice")


def test_a_freed_graph_names_the_backward_that_needs_retain_graph() -> None:
    diagnosis = seed_part("accumulation", f"{LEAF}y = x**2\ny.backward()\ny.backward()\n")["x.grad"]
    assert diagnosis.kind == "code_error" and "(line 4: y.backward())" in diagnosis.message
    assert "The backward() on line 3 (`y.backward()`) freed the graph's saved values: pass retain_graph=True" \
        in diagnosis.message


HAND_MADE = {
    "assigned, no backward at all": (f"{LEAF}x.grad = torch.tensor([4 * x0])\n", "no_backward",
                                     "Your code never calls backward(), so x.grad was not computed by autograd: it "
                                     "is assigned by hand on line 2 (`x.grad = torch.tensor([4 * x0])`)"),
    "assigned beside an unrelated backward": (f"{LEAF}(x * 1).backward()\nx.grad = torch.tensor([4 * x0])\n",
                                              "assigned", "x.grad was assigned by hand on line 3"),
    "doubled after one backward": (f"{LEAF}y = x**2\ny.backward()\nx.grad *= 2\n", "assigned",
                                   "x.grad was assigned by hand on line 4 (`x.grad *= 2`)"),
    "half put in by hand, half by backward": (f"{LEAF}x.grad = 2 * x.detach()\ny = x**2\ny.backward()\n",
                                              "added_to", "x.grad starts from numbers put there by hand on line 2"),
    "changed through .data": (f"{LEAF}y = x**2\ny.backward()\nx.grad.data.mul_(2)\n", "mul_",
                              "x.grad was changed by hand on line 4 (`x.grad.data.mul_(2)`) (mul_)"),
}


@pytest.mark.parametrize("case", list(HAND_MADE))
def test_a_grad_made_by_hand_fails_even_with_the_right_values(case: str) -> None:
    source, how, words = HAND_MADE[case]
    diagnosis = seed_part("accumulation", source)["x.grad"]
    assert (diagnosis.correct, diagnosis.kind, diagnosis.detail["reason"]) == (False, "not_autograd", how)
    assert words in diagnosis.message and "not" in diagnosis.message


def test_torch_autograd_grad_put_into_grad_is_still_autograd() -> None:
    student = f"{LEAF}y = x**2\n(g,) = torch.autograd.grad(2 * y, x)\nx.grad = g\n"
    assert seed_part("accumulation", student)["x.grad"].correct


@pytest.mark.parametrize("put", [
    "g1 = torch.autograd.grad(y, x, retain_graph=True)[0]\ng2 = torch.autograd.grad(y, x)[0]\nx.grad = g1 + g2\n",
    "x.grad = torch.autograd.grad(y, x, retain_graph=True)[0]\nx.grad += torch.autograd.grad(y, x)[0]\n",
])
def test_autograd_grads_added_up_into_grad_are_still_autograd(put: str) -> None:
    """Two backward calls' sum built from torch.autograd.grad's own results got 0 points as 'assigned by hand'."""
    assert seed_part("accumulation", f"{LEAF}y = x**2\n{put}")["x.grad"].correct


def test_a_number_added_to_an_autograd_grad_is_still_by_hand() -> None:
    student = f"{LEAF}y = x**2\ng = torch.autograd.grad(y, x)[0]\nx.grad = g + 2 * x0\n"  # half typed in
    diagnosis = seed_part("accumulation", student)["x.grad"]
    assert diagnosis.kind == "not_autograd"


@pytest.mark.parametrize(("student", "line"), [
    (f"{LEAF}y = torch.tensor([(x**2).item()], requires_grad=True)\ny.backward()\n", 2),  # .item(): a new leaf
    (f"import math\n{LEAF}y = torch.tensor([math.exp(x.item())], requires_grad=True)\ny.backward()\n", 3),
])
def test_a_leaf_no_backward_reaches_is_told_where_the_graph_stops(student: str, line: int) -> None:
    """x.grad None because y was rebuilt from Python numbers: the message said 'x has requires_grad=True and
    reaches y, so backward() stores a gradient', true of the reference, false of the student's program."""
    diagnosis = seed_part("positive-gradient", student)["x.grad"]
    assert (diagnosis.kind, diagnosis.detail["code"]["finding"]) == ("untracked_leaf", "not_reached")
    assert diagnosis.detail["code"]["line"] == line
    assert "In your program no gradient reaches x" in diagnosis.message and "reaches y, so" not in diagnosis.message


SGD = ("w = torch.tensor([w0], requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.1)\n"
       "for xi in (1.0, 2.0):\n    opt.zero_grad()\n    ((w * xi - 1) ** 2).sum().backward()\n    opt.step()\n")


def test_one_step_of_a_loop_that_zeroes_between_steps_is_not_told_as_a_sum_of_calls() -> None:
    """The exercise zeroes w.grad before each of its two steps; a student taking one step was told 'w.grad
    holds the sum of 2 calls', false for this exercise."""
    student = ("w = torch.tensor([w0], requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.1)\n"
               "opt.zero_grad()\n((w * 1.0 - 1) ** 2).sum().backward()\nopt.step()\n")
    diagnosis = program_part(SGD, student, {"w0": 0.5}, ["w.grad"])["w.grad"]
    assert (diagnosis.kind, diagnosis.detail["code"]["finding"]) == ("accumulation", "call_count")
    assert "zeroing w.grad in between: w.grad holds the last call's gradient" in diagnosis.message
    assert "sum of 2 calls" not in diagnosis.message


@pytest.mark.parametrize(("student", "words"), [
    (f"{LEAF}with torch.no_grad():\n    z = x**2 + 3*x\nz.backward()\n", "The cause is line 3"),
    (f"{LEAF}z = (x**2 + 3*x).detach()\nz.backward()\n", "The cause is line 2"),
    ("x = torch.tensor([x0])\nz = x**2 + 3*x\nx.requires_grad_(True)\nz.backward()\n",
     "The cause is line 3 (`x.requires_grad_(True)`): requires_grad is switched on after the computation"),
    (f"{LEAF}x.grad.zero_()\nz = x**2 + 3*x\nz.backward()\n", "A .grad is None until the first backward()"),
    (f"{LEAF}z = x**2 + 3*x\nz.backward()\nx -= 0.1 * x.grad\n", "inside `with torch.no_grad():`"),
])
def test_an_autograd_error_is_traced_to_the_line_that_causes_it(student: str, words: str) -> None:
    """'element 0 of tensors does not require grad' (and two other beginner errors) came as the bare error on
    the backward() line; its cause is another line."""
    diagnosis = seed_part("positive-gradient", student)["x.grad"]
    assert diagnosis.kind == "code_error" and words in diagnosis.message, diagnosis.message


MANUAL_STEP = ("w = torch.tensor([w0], requires_grad=True)\nL = (w * 3.0 - 1) ** 2\nL.sum().backward()\n"
               "with torch.no_grad():\n    w -= 0.1 * w.grad\nw.grad.zero_()\nL = (w * 3.0 - 1) ** 2\n"
               "L.sum().backward()\n")


def test_a_second_backward_through_the_old_graph_is_named_not_told_as_accumulation() -> None:
    """The loss not computed again after the update: the second backward() runs through the graph of the old w.
    It was told 'keeps only the first backward call … zeroes w.grad just before call 2', which the student
    does exactly as the exercise does."""
    student = ("w = torch.tensor([w0], requires_grad=True)\nL = ((w * 3.0 - 1) ** 2).sum()\n"
               "L.backward(retain_graph=True)\nwith torch.no_grad():\n    w -= 0.1 * w.grad\nw.grad.zero_()\n"
               "L.backward()\n")
    diagnosis = program_part(MANUAL_STEP, student, {"w0": 0.5}, ["w.grad"])["w.grad"]
    assert diagnosis.detail["code"]["finding"] == "stale_graph"
    assert diagnosis.message.startswith("Line 7 (`L.backward()`) calls backward() again on the L that line 3")
    assert "Compute L again (after the update)" in diagnosis.message


def test_a_reduction_in_place_of_the_exercises_seed_is_named() -> None:
    """y.mean().backward() where the exercise seeds y.backward(v): 'unknown', with nothing about the seed."""
    reference = "x = torch.tensor(xs, requires_grad=True)\ny = x**2\ny.backward(torch.tensor([1.0, 2.0, 0.5]))\n"
    student = "x = torch.tensor(xs, requires_grad=True)\ny = x**2\ny.mean().backward()\n"
    diagnosis = program_part(reference, student, {"xs": [1.0, 2.0, 3.0]}, ["x.grad"])["x.grad"]
    assert (diagnosis.kind, diagnosis.detail["code"]["finding"]) == ("seed_vector", "seed_left_out")
    assert diagnosis.message.startswith("Line 3 (`y.mean().backward()`) calls backward() without a seed")


def test_a_seed_the_exercise_does_not_pass_is_named_on_its_line() -> None:
    """z.backward(torch.tensor([2.0])) on a scalar's backward: told as 'counts the path twice' on a graph with
    a single path."""
    student = f"{LEAF}z = x**2 + 3*x\nz.backward(torch.tensor([2.0]))\n"
    diagnosis = seed_part("positive-gradient", student)["x.grad"]
    assert (diagnosis.kind, diagnosis.detail["code"]["finding"]) == ("seed_vector", "own_seed")
    assert diagnosis.message.startswith("Line 3 (`z.backward(torch.tensor([2.0]))`) passes backward() a seed")
    assert "twice" not in diagnosis.message


def test_a_detach_whose_result_is_thrown_away_is_named_as_that() -> None:
    """`a.detach()` on a line of its own: detach() returns a copy and leaves a as it was. It was told as a
    path 'which runs through detach()', the opposite of what the program does."""
    student = f"{LEAF}a = x**2\na.detach()\nz = a * x\nz.backward()\n"
    diagnosis = seed_part("detach", student)["x.grad"]
    assert (diagnosis.kind, diagnosis.detail["code"]["finding"]) == ("extra_path", "detach_discarded")
    assert diagnosis.message.startswith("Line 3 (`a.detach()`) makes a detached copy of a and throws it away")
    assert "a = a.detach()" in diagnosis.message and "runs through detach()" not in diagnosis.message


def test_a_clone_is_named_as_a_clone_not_as_a_detach() -> None:
    student = f"{LEAF}a = x**2\nb = a.clone()\nz = b * x\nz.backward()\n"
    diagnosis = seed_part("detach", student)["x.grad"]
    assert (diagnosis.kind, diagnosis.detail["code"]["finding"]) == ("extra_path", "clone")
    assert diagnosis.message.startswith("Line 3 (`b = a.clone()`): clone() copies a but keeps its graph")
    assert "x → pow → clone → mul → z" in diagnosis.message and "runs through detach()" not in diagnosis.message


def test_no_cut_at_all_points_at_the_line_that_should_freeze() -> None:
    student = f"{LEAF}a = x**2\nb = a  # freeze me\nz = b * x\nz.backward()\n"
    diagnosis = seed_part("detach", student)["x.grad"]
    assert diagnosis.detail["code"]["finding"] == "no_cut"
    assert "no detach(), .data or torch.no_grad()" in diagnosis.message
    assert "On line 3 (`b = a  # freeze me`), b still carries gradient" in diagnosis.message


@pytest.mark.parametrize("frozen", ["a.detach()", "a.data"])
def test_other_ways_to_freeze_are_right(frozen: str) -> None:
    assert seed_part("detach", f"{LEAF}a = x**2\nb = {frozen}\nz = b * x\nz.backward()\n")["x.grad"].correct


def test_a_detach_the_exercise_does_not_have_is_named_on_its_line() -> None:
    student = f"{LEAF}y = torch.tensor([y0], requires_grad=True)\nz = x.detach() * y + x**2\nz.backward()\n"
    graded = seed_part("visual-walkthrough", student)
    diagnosis = graded["x.grad"]
    assert (diagnosis.kind, diagnosis.detail["code"]["finding"]) == ("missing_path", "extra_cut")
    assert diagnosis.message.startswith("Line 3 (`z = x.detach() * y + x**2`) cuts the gradient: detach()")
    assert "x → mul → add → z" in diagnosis.message and graded["y.grad"].correct


def test_tracking_the_wrong_leaf_is_named_on_the_line_that_creates_it() -> None:
    swapped = "x = torch.tensor([x0], requires_grad=True)\nw = torch.tensor([w0])\nz = w * x\nz.backward()\n"
    graded = seed_part("untracked-leaf", swapped)
    assert {part: (d.kind, d.detail["code"]["finding"]) for part, d in graded.items()} == {
        "x.grad": ("untracked_leaf", "requires_grad"), "w.grad": ("untracked_leaf", "requires_grad")}
    assert graded["x.grad"].message.startswith("Line 1 (`x = torch.tensor([x0], requires_grad=True)`) creates x with "
                                               "requires_grad=True, so autograd tracks it")
    assert graded["w.grad"].message.startswith("w is not tracked in your program: line 2 (`w = torch.tensor([w0])`) "
                                               "creates it without requires_grad=True")


def test_a_leaf_turned_into_a_result_is_named_on_its_line() -> None:
    student = "x = torch.tensor([x0])\nstart = torch.tensor([0.0], requires_grad=True)\nw = start + w0\n" \
              "z = w * x\nz.backward()\n"
    diagnosis = seed_part("untracked-leaf", student)["w.grad"]
    assert diagnosis.detail["code"]["finding"] == "not_a_leaf"
    assert diagnosis.message.startswith("Line 3 (`w = start + w0`) makes w the result of an operation, not a leaf")


def test_an_in_place_op_that_breaks_backward_is_named_as_the_cause() -> None:
    reference = f"{LEAF}a = x.exp()\nb = a * 2\nb.sum().backward()\n"
    student = f"{LEAF}a = x.exp()\na.mul_(2)\na.sum().backward()\n"
    diagnosis = program_part(reference, student, {"x0": 1.0}, ["x.grad"])["x.grad"]
    assert diagnosis.kind == "code_error" and "(line 4: a.sum().backward())" in diagnosis.message
    assert "The cause is line 3 (`a.mul_(2)`): mul_ changes a in place" in diagnosis.message


def test_function_parts_speak_of_the_students_return_values() -> None:
    own_names = grad_z("def grad_z(x, y):\n    slope_x = 2*x\n    slope_y = x\n    return slope_x, slope_y\n")
    assert own_names["x.grad"].message.startswith("Your slope_x leaves out the path x → mul → add → z")
    assert own_names["y.grad"].message.startswith("Correct: your slope_y matches")
    unnamed = grad_z("def grad_z(x, y):\n    return y * 2*x, y\n")  # `y` is an argument: the signature's name
    assert unnamed["x.grad"].message.startswith("Your dz_dx multiplies the parallel paths")
    assert unnamed["y.grad"].message.startswith("Your dz_dy is the forward value of y")
    shaped = grad_z("def grad_z(x, y):\n    return [y + 2*x, 1], x\n")["x.grad"]
    assert shaped.message.startswith("Your dz_dx has the shape of x")
    for graded in (own_names, unnamed):
        assert all("x.grad" not in d.message and "y.grad" not in d.message for d in graded.values())


def accumulation_report(source: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    points = evaluation_points(params=SEEDS["accumulation"].params, ranges={}, count=3, seed="forged")
    report = json.loads(json.dumps(run_harness({"mode": "program", "source": source, "reads": ["x.grad"],
                                                "points": points})))
    return report, points


def graded_report(report: dict[str, Any], points: list[dict[str, Any]], source: str) -> Any:
    analyses = analyses_at(SEEDS["accumulation"].program, points, ["x.grad"])
    return grade_code(harness_output=report, analyses=analyses, points=points, parts=["x.grad"], returns=None,
                      source=source, **TOLERANCES)["x.grad"]


def test_a_forged_trace_cannot_pass_a_grad_the_source_never_computes() -> None:
    typed = f"{LEAF}x.grad = torch.tensor([4 * x0])\n"
    report, points = accumulation_report(typed)
    for point in report["points"]:
        point["trace"]["grads"]["x.grad"] = {"source": "autograd", "line": None, "how": "backward"}
    diagnosis = graded_report(report, points, typed)
    assert (diagnosis.correct, diagnosis.kind, diagnosis.detail["reason"]) == (False, "not_autograd", "no_backward")


def test_a_forged_trace_cannot_make_wrong_values_right() -> None:
    once = f"{LEAF}y = x**2\ny.backward()\n"
    report, points = accumulation_report(once)
    reference, _ = accumulation_report(SEEDS["accumulation"].program.strip() + "\n")
    for point, right in zip(report["points"], reference["points"], strict=True):
        point["trace"] = right["trace"]  # the reference's own structure, claimed for the student's code
    assert not graded_report(report, points, once).correct


@pytest.mark.parametrize("forgery", [
    lambda trace: trace["backward"][0].update(line=99),  # not a line of the student's code
    lambda trace: trace["backward"][0].update(output="os.system('x'); y"),
    lambda trace: trace.update(ops=[{"op": "rm -rf", "line": 1, "tensor": None, "result": None, "name": "x",
                                     "count": 1}]),
    lambda trace: trace.update(backward=trace["backward"] * 20),
    lambda trace: trace["grads"].update({"x.grad": {"source": "trusted", "line": None, "how": None}}),
], ids=["line", "name", "op", "size", "source"])
def test_a_malformed_trace_rejects_the_report(forgery: Any) -> None:
    source = f"{LEAF}y = x**2\ny.backward(retain_graph=True)\ny.backward()\n"
    report, points = accumulation_report(source)
    forged = copy.deepcopy(report)
    forgery(forged["points"][0]["trace"])
    diagnosis = graded_report(forged, points, source)
    assert (diagnosis.kind, diagnosis.detail["reason"]) == ("unknown", "malformed_output")
    assert graded_report(report, points, source).correct


def test_module_parameters_are_traced_by_their_part_keys() -> None:
    reference = ("torch.manual_seed(0)\nnet = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh(), "
                 "torch.nn.Linear(2, 1))\nloss = net(torch.tensor([[x0, 1.0]])).sum()\nloss.backward()\n")
    twice = reference.replace("loss.backward()\n", "loss.backward(retain_graph=True)\nloss.backward()\n")
    graded = program_part(reference, twice, {"x0": 2.0}, ["net.0.weight.grad"])["net.0.weight.grad"]
    assert graded.message.startswith("Your program calls backward() twice (lines 4 and 5), but this exercise calls "
                                     "it once")


def test_a_write_into_data_is_told_as_values_changed_behind_autograd_not_as_a_cut() -> None:
    """`v.data -= t` keeps v in the graph (the gradient is not cut): tanh's backward reads its saved
    output, now v - t. The message said the path 'carries no gradient' and to 'use v itself there',
    which is the in-place error the student was fixing."""
    reference = (f"{LEAF}t = torch.tensor([0.25])\nv = torch.tanh(x * 2)\nd = v - t\nL = (d ** 2).sum()\n"
                 "L.backward()\n")
    student = f"{LEAF}t = torch.tensor([0.25])\nv = torch.tanh(x * 2)\nv.data -= t\nL = (v ** 2).sum()\nL.backward()\n"
    diagnosis = program_part(reference, student, {"x0": 0.5}, ["x.grad"])["x.grad"]
    assert not diagnosis.correct
    assert diagnosis.detail["code"]["finding"] == "data_write"
    assert diagnosis.message.startswith("Line 4 (`v.data -= t`) changes v's values behind autograd's back")
    assert "`d = v - t`" in diagnosis.message and "carries no gradient" not in diagnosis.message


@pytest.mark.parametrize("reset", ["x.grad.zero_()", "x.grad = None"])
def test_a_reset_after_the_last_call_is_named_not_told_as_never_resetting(reset: str) -> None:
    """It was 'never resets x.grad … holds the sum of all 2', about a program whose .grad ends empty."""
    student = f"{LEAF}y = x**2\ny.backward(retain_graph=True)\ny.backward()\n{reset}\n"
    diagnosis = seed_part("accumulation", student)["x.grad"]
    assert not diagnosis.correct
    if reset.endswith("None"):
        return  # None where a number is expected: the untracked-leaf story, whatever the reset
    assert (diagnosis.kind, diagnosis.detail["code"]["finding"]) == ("accumulation", "reset_after_last")
    assert diagnosis.message.startswith(f"Line 5 (`{reset}`) resets x.grad after the last backward() call")
    assert "never resets" not in diagnosis.message


def test_fewer_calls_is_no_mistake_where_the_exercise_resets_between_its_calls() -> None:
    """The reference zeroes x.grad between its two calls: only the last counts, so one call is right."""
    reference = f"{LEAF}y = x**2\ny.backward(retain_graph=True)\nx.grad.zero_()\n(3 * y).backward()\n"
    graded = program_part(reference, f"{LEAF}y = x**2\n(3 * y).backward()\n", {"x0": 2.0}, ["x.grad"])["x.grad"]
    assert graded.correct, graded.message


def test_a_grad_changed_but_not_emptied_after_the_last_call_is_no_reset() -> None:
    """A reference ending with `x.grad /= 2` (an average of two calls) counted as a reset: the student who
    forgot the halving was told about zero_() 'so that only the last 0 calls count'."""
    reference = f"{LEAF}y = x**2\ny.backward(retain_graph=True)\ny.backward()\nx.grad /= 2\n"
    student = f"{LEAF}y = x**2\ny.backward(retain_graph=True)\ny.backward()\n"
    graded = program_part(reference, student, {"x0": 2.0}, ["x.grad"])["x.grad"]
    assert not graded.correct
    assert "0 calls" not in graded.message and "reset" not in graded.message, graded.message
