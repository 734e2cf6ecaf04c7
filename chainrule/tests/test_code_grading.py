"""Code parts end to end, in-process: realistic student code run by the harness
at every evaluation point, its untrusted report validated and diagnosed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chainrule import Diagnosis
from chainrule.answers.code_grading import grade_code
from chainrule.code.harness import run_harness
from chainrule.evaluation_points import evaluation_points
from chainrule.tests.point_analyses import analyses_at, seed_analyses, seed_points
from chainrule.tests.seeds import SEEDS

TOLERANCES: dict[str, Any] = {"rel_tol": 1e-4, "abs_tol": 1e-6}


def function_part(slug: str, source: str, *, function: str, args: list[str], returns: list[str],
                  **options: Any) -> dict[str, Diagnosis]:
    arg_type = options.pop("arg_type", "float")
    signature = options.pop("signature", None)
    points = seed_points(slug, vary=args, **options)
    job = {"mode": "function", "source": source, "function": function, "args": args, "returns": len(returns),
           "arg_type": arg_type, "points": points}
    report = json.loads(json.dumps(run_harness(job)))  # what crosses the sandbox boundary
    return grade_code(harness_output=report, analyses=seed_analyses(slug, points), points=points, parts=returns,
                      returns=returns, source=source, function=function, signature=signature,
                      **TOLERANCES)


def grad_z(source: str, **options: Any) -> dict[str, Diagnosis]:
    return function_part("visual-walkthrough", source, function="grad_z", args=["x0", "y0"],
                         returns=["x.grad", "y.grad"], signature="grad_z(x, y) -> (dz_dx, dz_dy)", **options)


def program_part(reference: str, source: str, params: dict[str, Any], parts: list[str],
                 reference_error: str | None = None) -> dict[str, Diagnosis]:
    points = evaluation_points(params=params, ranges={}, count=4, seed="student-7/program")
    report = json.loads(json.dumps(run_harness({"mode": "program", "source": source, "reads": parts,
                                                "points": points})))
    analyses = [] if reference_error else analyses_at(reference, points, parts)
    return grade_code(harness_output=report, analyses=analyses, points=points, parts=parts, returns=None,
                      reference_error=reference_error, source=source, **TOLERANCES)


def kinds(diagnoses: dict[str, Diagnosis]) -> dict[str, str]:
    return {part: diagnosis.kind for part, diagnosis in diagnoses.items()}


def test_a_grad_z_that_forgets_the_xy_path_misses_the_multiply_path() -> None:
    graded = grad_z("def grad_z(x, y):\n    return 2*x, x\n")
    assert kinds(graded) == {"x.grad": "missing_path", "y.grad": "correct"}
    assert graded["x.grad"].paths == [["x", "mul", "add", "z"]]


def test_a_grad_z_with_a_flipped_sign_is_a_sign_error() -> None:
    graded = grad_z("def grad_z(x, y):\n    dz_dx = y - 2*x\n    return dz_dx, x\n")
    assert (graded["x.grad"].kind, graded["x.grad"].paths) == ("sign_error", [["x", "pow", "add", "z"]])


def test_a_grad_z_that_multiplies_the_paths_is_a_product_of_paths() -> None:
    assert grad_z("def grad_z(x, y):\n    return y * 2*x, x\n")["x.grad"].kind == "product_of_paths"


@pytest.mark.parametrize(
    "source",
    [
        "def grad_z(a, b):\n    return b + 2 * a, a\n",
        "import numpy\ndef grad_z(x, y):\n    g = numpy.array([y + 2 * x, x])\n    return g[0], g[1]\n",
        "def grad_z(x, y):\n    h = 1e-6\n    f = lambda u, v: u * v + u ** 2\n"
        "    return (f(x + h, y) - f(x - h, y)) / (2 * h), (f(x, y + h) - f(x, y - h)) / (2 * h)\n",
        "def grad_z(x, y):\n    return np.stack([np.float64(y) + 2 * x, np.float64(x)])\n",
    ],
)
def test_correct_solutions_written_differently_are_correct(source: str) -> None:
    assert kinds(grad_z(source)) == {"x.grad": "correct", "y.grad": "correct"}


def test_tensor_arguments_and_a_tensor_return_are_correct_too() -> None:
    graded = grad_z("def grad_z(x, y):\n    return torch.stack([y + 2 * x, x])\n", arg_type="tensor")
    assert kinds(graded) == {"x.grad": "correct", "y.grad": "correct"}


def test_counting_the_detached_path_is_an_extra_path() -> None:
    graded = function_part("detach", "def grad(x):\n    return 3 * x**2\n", function="grad", args=["x0"],
                           returns=["x.grad"])
    assert (graded["x.grad"].kind, graded["x.grad"].paths) == ("extra_path", [["x", "pow", "detach", "mul", "z"]])


def test_a_program_without_the_detach_counts_the_cut_path() -> None:
    student = "x = torch.tensor([x0], requires_grad=True)\na = x**2\nb = a\nz = b * x\nz.backward()\n"
    graded = program_part(SEEDS["detach"].program, student, {"x0": 2.0}, ["x.grad"])
    assert (graded["x.grad"].kind, graded["x.grad"].paths) == ("extra_path", [["x", "pow", "detach", "mul", "z"]])


def test_a_program_that_detaches_x_in_the_product_misses_that_path() -> None:
    student = ("x = torch.tensor([x0], requires_grad=True)\ny = torch.tensor([y0], requires_grad=True)\n"
               "z = x.detach() * y + x**2\nz.backward()\n")
    graded = program_part(SEEDS["visual-walkthrough"].program, student, {"x0": 2.0, "y0": 3.0}, ["x.grad", "y.grad"])
    assert kinds(graded) == {"x.grad": "missing_path", "y.grad": "correct"}


def test_zeroing_between_two_backward_calls_is_an_accumulation_mistake() -> None:
    student = ("x = torch.tensor([x0], requires_grad=True)\ny = x**2\ny.backward(retain_graph=True)\n"
               "x.grad.zero_()\ny.backward()\n")
    graded = program_part(SEEDS["accumulation"].program, student, {"x0": 2.0}, ["x.grad"])
    assert (graded["x.grad"].kind, graded["x.grad"].detail["counted"]) == ("accumulation", 1)


TRAINING = """x = torch.tensor(xs)
w = torch.tensor(ws, requires_grad=True)
for step in range(3):
    if w.grad is not None:
        w.grad.zero_()
    loss = (w * x).sum()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
"""


def test_a_training_loop_that_never_zeroes_accumulates_every_step() -> None:
    student = TRAINING.replace("    if w.grad is not None:\n        w.grad.zero_()\n", "")
    graded = program_part(TRAINING, student, {"xs": [1.0, 2.0], "ws": [0.5, -0.3]}, ["w.grad"])
    diagnosis = graded["w.grad"]
    assert (diagnosis.kind, diagnosis.detail["belief"], diagnosis.detail["from_call"]) == (
        "accumulation", "zeroed_before", 1)  # every call summed: the zero_() left out
    # named from the student's own loop, not from the reference's zero_()
    assert "never resets w.grad between its 3 backward() calls (line 5, in a loop)" in diagnosis.message
    assert "only the last call counts" in diagnosis.message
    assert program_part(TRAINING, TRAINING, {"xs": [1.0, 2.0], "ws": [0.5, -0.3]}, ["w.grad"])["w.grad"].correct


def test_a_relu_derivative_that_ignores_the_sign_is_a_dead_branch() -> None:
    always_one = "def relu_grad(x):\n    return 1.0\n"
    graded = function_part("dead-relu", always_one, function="relu_grad", args=["x0"], returns=["x.grad"])
    assert (graded["x.grad"].kind, graded["x.grad"].detail["slopes"]) == ("dead_branch", "identity")
    both_sides = {"ranges": {"x0": {"min": -3, "max": 3}}}
    graded = function_part("dead-relu", always_one, function="relu_grad", args=["x0"], returns=["x.grad"],
                           **both_sides)
    assert graded["x.grad"].kind == "dead_branch" and "right at" in graded["x.grad"].message
    right = "def relu_grad(x):\n    return 1.0 if x > 0 else 0.0\n"
    assert function_part("dead-relu", right, function="relu_grad", args=["x0"], returns=["x.grad"],
                         **both_sides)["x.grad"].correct


BUGGY = "x = torch.tensor([x0], requires_grad=True)\nx += 1\ny = x**2\ny.backward()\n"
FIXED = "x = torch.tensor([x0], requires_grad=True)\nx1 = x + 1\ny = x1**2\ny.backward()\n"


def test_fix_mode_reports_the_in_place_error_at_the_students_line() -> None:
    diagnosis = program_part(FIXED, BUGGY, {"x0": 2.0}, ["x.grad"])["x.grad"]
    assert diagnosis.kind == "code_error" and not diagnosis.correct
    assert "in-place operation" in diagnosis.message and "(line 2: x += 1)" in diagnosis.message
    assert program_part(FIXED, FIXED, {"x0": 2.0}, ["x.grad"])["x.grad"].correct


def test_raising_what_the_reference_raises_is_compared_by_type() -> None:
    assert program_part("", BUGGY, {"x0": 2.0}, ["x.grad"], reference_error="RuntimeError")["x.grad"].correct
    diagnosis = program_part("", FIXED, {"x0": 2.0}, ["x.grad"], reference_error="RuntimeError")["x.grad"]
    assert (diagnosis.kind, diagnosis.detail["reason"]) == ("unknown", "no_exception")


def test_code_that_does_not_run_gets_the_harness_message() -> None:
    syntax = grad_z("def grad_z(x, y)\n    return y + 2*x, x\n")
    assert {d.kind for d in syntax.values()} == {"code_error"} and "(line 1)" in syntax["x.grad"].message
    missing = grad_z("def gradient(x, y):\n    return y + 2*x, x\n")
    assert missing["y.grad"].message == "Your code does not define grad_z(x0, y0)."


def test_code_failing_at_one_point_names_that_point_and_line() -> None:
    diagnosis = grad_z("def grad_z(x, y):\n    return y + 2*x + 0 / (x - 2), x\n")["x.grad"]
    assert diagnosis.kind == "code_error"
    assert diagnosis.message.startswith("At x0 = 2, y0 = 3: Your code raised ZeroDivisionError")
    assert "(line 2: return y + 2*x + 0 / (x - 2), x)" in diagnosis.message


def valid_report(points: int) -> dict[str, Any]:
    point = {"values": {"0": 1.0, "1": 2.0}, "error": None}
    return {"ok": True, "error": None, "stdout": "", "points": [point] * points}


@pytest.mark.parametrize(
    "forged",
    [
        None,
        "correct",
        [],
        {"ok": "yes", "error": None, "points": []},
        {**valid_report(6), "points": valid_report(5)["points"]},
        {**valid_report(6), "extra": 1},
        {**valid_report(6), "points": [{"values": {"0": "7", "1": 2.0}, "error": None}] * 6},
        {**valid_report(6), "points": [{"values": {"0": float("nan"), "1": 2.0}, "error": None}] * 6},
        {**valid_report(6), "points": [{"values": {"0": True, "1": 2.0}, "error": None}] * 6},
        {**valid_report(6), "points": [{"values": {"0": [[[[[[[[1.0]]]]]]]], "1": 2.0}, "error": None}] * 6},
        {**valid_report(6), "points": [{"values": {"0": [0.0] * 30_000, "1": 2.0}, "error": None}] * 6},
        {**valid_report(6), "points": [{"values": {"0": 1.0}, "error": 5}] * 6},
        {**valid_report(6), "points": [{"values": {}, "error": None, "raised": {"type": "os.system", "line": 1}}] * 6},
    ],
)
def test_a_malformed_report_is_an_unknown_diagnosis_never_an_exception(forged: Any) -> None:
    points = seed_points("visual-walkthrough")
    graded = grade_code(harness_output=forged, analyses=seed_analyses("visual-walkthrough", points), points=points,
                        parts=["x.grad", "y.grad"], returns=["x.grad", "y.grad"], **TOLERANCES)
    assert {(d.kind, d.detail["reason"]) for d in graded.values()} == {("unknown", "malformed_output")}


def test_a_well_formed_forged_report_is_just_graded() -> None:
    points = seed_points("visual-walkthrough")
    graded = grade_code(harness_output=valid_report(len(points)), analyses=seed_analyses("visual-walkthrough", points),
                        points=points, parts=["x.grad"], returns=["x.grad", "y.grad"], **TOLERANCES)
    assert not graded["x.grad"].correct


def test_a_part_the_function_does_not_return_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="return values"):
        grade_code(harness_output=valid_report(1), analyses=[], points=[{}], parts=["w.grad"],
                   returns=["x.grad"], **TOLERANCES)


def test_two_return_values_in_the_wrong_order_are_told_as_swapped() -> None:
    """`return dz_dy, dz_dx` was told as two mistakes and an unknown."""
    graded = grad_z("def grad_z(x, y):\n    dz_dx = y + 2*x\n    dz_dy = x\n    return dz_dy, dz_dx\n")
    assert all(not d.correct and d.detail["reason"] == "swapped" for d in graded.values())
    assert all(d.kind == "other_gradient" for d in graded.values())  # a named mistake, counted as such
    # in the student's names (dz_dx), not the .grad of a float function that has none
    assert graded["x.grad"].message.startswith(
        "Your first return value (dz_dy) is the right value for dz_dy, and the other way round")
    assert "must return dz_dx and then dz_dy, in that order" in graded["x.grad"].message
    one_swapped_one_wrong = grad_z("def grad_z(x, y):\n    return x, y + 3*x\n")
    assert all(d.detail.get("reason") != "swapped" for d in one_swapped_one_wrong.values())


@pytest.mark.parametrize(("source", "words"), [
    ("def grad_z(x):\n    dz = 4 - 3*x**2\n", "it has no return statement"),  # the return forgotten
    ("def grad_z(x):\n    print(4 - 3*x**2)\n", "line 2 prints the value instead: print only shows it"),
])
def test_a_function_that_gives_none_is_told_about_return_not_about_untracked_tensors(source: str, words: str) -> None:
    """A by-hand function without return was told "x has requires_grad=True and reaches z, so backward()
    stores a gradient": an autograd lesson about a function that never touched autograd."""
    graded = function_part("negative-gradient", source, function="grad_z", args=["x0"], returns=["x.grad"],
                           signature="grad_z(x) -> dz_dx")["x.grad"]
    assert graded.kind == "code_error" and graded.detail["reason"] == "returned_none"
    assert words in graded.message and "requires_grad" not in graded.message
