"""Diagnosis over several evaluation points: hypotheses matched across points,
the integer decomposition over path contributions, and the unknown table."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import pytest

from chainrule import Diagnosis
from chainrule.diagnosis.across_points import diagnose_points
from chainrule.evaluation_points import evaluation_points
from chainrule.tests.point_analyses import analyses_at, seed_analyses, seed_points
from chainrule.values import Value, format_value

THREE_PATHS = (
    "x = torch.tensor([x0], requires_grad=True)\ny = torch.tensor([y0], requires_grad=True)\n"
    "z = x * y + x**2 + torch.sin(x)\nz.backward()\n"
)
THREE_POINTS = evaluation_points(params={"x0": 2.0, "y0": 3.0}, ranges={}, count=5, seed="three-paths")
Formula = Callable[..., Value]


def seed_diagnosis(slug: str, part: str, formula: Formula, **point_options: object) -> Diagnosis:
    points = seed_points(slug, **point_options)  # type: ignore[arg-type]
    answers = [formula(*point.values()) for point in points]
    return diagnose_points(analyses=seed_analyses(slug, points), part=part, answers=answers,
                           rel_tol=1e-4, abs_tol=1e-6, points=points)


def three_path_diagnosis(formula: Formula) -> Diagnosis:
    answers = [formula(point["x0"], point["y0"]) for point in THREE_POINTS]
    return diagnose_points(analyses=analyses_at(THREE_PATHS, THREE_POINTS, ["x.grad"]), part="x.grad",
                           answers=answers, rel_tol=1e-4, abs_tol=1e-6, points=THREE_POINTS)


def walkthrough(formula: Formula, part: str = "x.grad") -> Diagnosis:
    return seed_diagnosis("visual-walkthrough", part, formula)


def test_it_accepts_the_gradient_at_every_point() -> None:
    diagnosis = walkthrough(lambda x, y: y + 2 * x)
    assert diagnosis.correct and diagnosis.kind == "correct"
    assert "all 6 points" in diagnosis.message and diagnosis.expected == [7.0]


def test_it_names_the_missing_multiply_path() -> None:
    diagnosis = walkthrough(lambda x, y: 2 * x)
    assert (diagnosis.kind, diagnosis.paths) == ("missing_path", [["x", "mul", "add", "z"]])
    assert "all 6 points" in diagnosis.message


def test_it_tells_a_forward_value_from_a_missing_path_where_one_point_cannot() -> None:
    # At the seed point x² = 2x = 4; only the other points separate the two stories.
    assert walkthrough(lambda x, y: x**2).kind == "forward_value"
    assert walkthrough(lambda x, y: 2 * x).kind == "missing_path"


def test_it_finds_a_flipped_path_sign_and_a_product_of_paths() -> None:
    assert walkthrough(lambda x, y: y - 2 * x).paths == [["x", "pow", "add", "z"]]
    assert walkthrough(lambda x, y: y - 2 * x).kind == "sign_error"
    assert walkthrough(lambda x, y: y * 2 * x).kind == "product_of_paths"


def test_it_decomposes_a_path_counted_twice() -> None:
    diagnosis = walkthrough(lambda x, y: y + 4 * x)
    assert (diagnosis.kind, diagnosis.paths) == ("extra_path", [["x", "pow", "add", "z"]])
    assert diagnosis.detail["decomposition"] == [
        {"role": "path", "paths": [["x", "pow", "add", "z"]], "coefficient": 1}]
    assert "twice" in diagnosis.message


def test_it_decomposes_a_combination_of_slips() -> None:
    diagnosis = three_path_diagnosis(lambda x, y: y - 2 * x)
    assert diagnosis.kind == "combination"
    assert sorted(diagnosis.paths) == [["x", "pow", "add", "add", "z"], ["x", "sin", "add", "z"]]
    assert "leaves out x → sin → add → z" in diagnosis.message
    assert "flips the sign of x → pow → add → add → z" in diagnosis.message


def test_it_finds_two_missing_paths_of_three() -> None:
    diagnosis = three_path_diagnosis(lambda x, y: 2 * x)
    assert diagnosis.kind == "missing_path"
    assert sorted(diagnosis.paths) == [["x", "mul", "add", "add", "z"], ["x", "sin", "add", "z"]]


def test_it_prefers_the_wrong_local_derivative_for_a_sign_that_belongs_to_one_edge() -> None:
    diagnosis = three_path_diagnosis(lambda x, y: y + 2 * x - math.cos(x))
    assert diagnosis.kind == "wrong_local_derivative"
    assert diagnosis.detail["used"] == "-cos(x)"


def test_it_names_a_wrong_local_derivative_that_fits_every_point() -> None:
    diagnosis = seed_diagnosis("negative-gradient", "x.grad", lambda x: 4 - 3 * x)
    assert diagnosis.kind == "wrong_local_derivative"
    assert diagnosis.detail["edge"] == ["x", "pow"] and diagnosis.detail["used"] == "3·x"


def test_it_finds_a_dead_branch_where_the_relu_is_off_and_accepts_the_rest() -> None:
    diagnosis = seed_diagnosis("dead-relu", "x.grad", lambda x: 1.0, ranges={"x0": {"min": -3, "max": 3}})
    assert (diagnosis.kind, diagnosis.detail["slopes"]) == ("dead_branch", "identity")
    assert 0 < diagnosis.detail["points_wrong"] < diagnosis.detail["points_checked"]
    assert "right at" in diagnosis.message


def test_it_finds_an_extra_path_through_detach() -> None:
    diagnosis = seed_diagnosis("detach", "x.grad", lambda x: 3 * x**2)
    assert (diagnosis.kind, diagnosis.paths) == ("extra_path", [["x", "pow", "detach", "mul", "z"]])


def test_it_reports_none_for_a_tracked_leaf_structurally() -> None:
    diagnosis = walkthrough(lambda x, y: None, part="y.grad")
    assert diagnosis.kind == "untracked_leaf" and "point" in diagnosis.detail


def test_it_reports_a_wrong_shape() -> None:
    diagnosis = seed_diagnosis("non-scalar", "x.grad", lambda xs, v: sum(2 * x for x in xs))
    assert diagnosis.kind == "shape"


def test_unknown_lists_a_few_points_and_keeps_the_expected_values_for_instructors() -> None:
    points = seed_points("visual-walkthrough")
    diagnosis = walkthrough(lambda x, y: y + 2 * x + 0.5)
    assert diagnosis.kind == "unknown"
    table = diagnosis.detail["table"]
    assert [row["point"] for row in table] == points
    assert all(set(row) == {"point", "expected", "got"} for row in table)
    # The program's names (x, y), never the parameters' (x0, y0).
    assert diagnosis.message.count("At x = ") == 3 and "3 more points" in diagnosis.message
    assert "x0" not in diagnosis.message
    for row in table:  # no expected value appears as a number of its own
        assert not re.search(rf"(?<![\d.]){re.escape(format_value(row['expected'][0]))}(?![\d.])", diagnosis.message)


def test_it_explains_a_mistake_only_if_it_fits_every_point() -> None:
    # Missing the x·y path at the seed point only, right elsewhere: no story fits all points.
    points = seed_points("visual-walkthrough")
    answers: list[Value] = [4.0] + [p["y0"] + 2 * p["x0"] for p in points[1:]]
    diagnosis = diagnose_points(analyses=seed_analyses("visual-walkthrough", points), part="x.grad",
                                answers=answers, rel_tol=1e-4, abs_tol=1e-6, points=points)
    assert diagnosis.kind == "unknown"


def test_it_rejects_mismatched_inputs() -> None:
    points = seed_points("visual-walkthrough")
    analyses = seed_analyses("visual-walkthrough", points)
    with pytest.raises(ValueError, match="one analysis"):
        diagnose_points(analyses=analyses, part="x.grad", answers=[7.0], rel_tol=1e-4, abs_tol=1e-6)
    with pytest.raises(ValueError, match="no part"):
        diagnose_points(analyses=analyses[:1], part="w.grad", answers=[7.0], rel_tol=1e-4, abs_tol=1e-6)


def test_a_single_point_behaves_like_the_numeric_diagnosis() -> None:
    analyses = seed_analyses("visual-walkthrough", seed_points("visual-walkthrough", count=0))
    diagnosis = diagnose_points(analyses=analyses, part="x.grad", answers=[4.0], rel_tol=1e-4, abs_tol=1e-6)
    assert (diagnosis.kind, diagnosis.paths) == ("missing_path", [["x", "mul", "add", "z"]])
    assert "points checked" not in diagnosis.message


def test_a_point_is_named_by_the_programs_variables_tracked_first_never_an_unnamed_constant() -> None:
    """BCE's 1 - y (y data) is a folded constant: the point read "constant = 0, x = 1.5, y = 1, b = -0.2"
    and left out w, the variable the formula is differentiated by."""
    from chainrule import analyze_program
    from chainrule.diagnosis.across_points import _student_values

    program = ("x = torch.tensor(x0)\ny = torch.tensor(y0)\nw = torch.tensor(w0, requires_grad=True)\n"
               "b = torch.tensor(b0, requires_grad=True)\np = torch.sigmoid(w * x + b)\n"
               "L = -(y * torch.log(p) + (1 - y) * torch.log(1 - p))\nL.backward()\n")
    point = {"x0": 1.5, "y0": 1.0, "w0": 0.7, "b0": -0.2}
    analysis = analyze_program(program=program, params=point, parts=["w.grad"])
    named = _student_values(analysis, point)
    assert "constant" not in named
    assert named.split(", ")[:2] == ["b = -0.2", "w = 0.7"] and "x = 1.5" in named and "y = 1" in named


def test_a_point_names_a_leaf_only_while_it_holds_its_parameter_and_names_a_number_parameter() -> None:
    """'At w = 0.8' for a student whose w0 is 0.5 (w after the exercise's SGD step); and sin(w·c)'s c, a Python
    number, was never named, nor does a detached t belong in the point."""
    from chainrule import analyze_program
    from chainrule.diagnosis.across_points import _student_values

    stepped = ("w = torch.tensor(w0, requires_grad=True)\n(w * 3).backward()\nwith torch.no_grad():\n"
               "    w -= 0.1 * w.grad\nw.grad.zero_()\n(w * w).backward()\n")
    point = {"w0": 0.5}
    assert _student_values(analyze_program(program=stepped, params=point, parts=["w.grad"]), point) == "w0 = 0.5"
    scaled = {"w0": 0.7, "c": 2.5}
    assert _student_values(analyze_program(program=SCALED, params=scaled, parts=["w.grad"]), scaled) == \
        "w = 0.7, c = 2.5"


PRODUCT = "x = torch.tensor(x0, requires_grad=True)\nz = x * torch.sin(x)\nz.backward()\n"
PRODUCT_POINTS = evaluation_points(params={"x0": 2.0}, ranges={}, count=5, seed="product-rule")


def test_the_product_of_the_factors_derivatives_is_the_product_rule_broken() -> None:
    """d(x·sin x)/dx worked out as 1·cos x: told as two unrelated slips (a number) or as nothing (a formula)."""
    analyses = analyses_at(PRODUCT, PRODUCT_POINTS, ["x.grad"])
    formula = diagnose_points(analyses=analyses, part="x.grad", answers=[math.cos(p["x0"]) for p in PRODUCT_POINTS],
                              rel_tol=1e-4, abs_tol=1e-6, points=PRODUCT_POINTS)
    number = diagnose_points(analyses=analyses[:1], part="x.grad", answers=[math.cos(PRODUCT_POINTS[0]["x0"])],
                             rel_tol=1e-4, abs_tol=1e-6, points=PRODUCT_POINTS[:1])
    for diagnosis in (formula, number):
        assert (diagnosis.kind, diagnosis.detail.get("rule")) == ("product_of_paths", "product_rule")
        assert diagnosis.detail["factors"] == ["x", "sin(x)"]
        assert "(x·sin(x))′ = x′·sin(x) + x·sin(x)′ (′: the derivative by x)" in diagnosis.message
    right = [math.sin(p["x0"]) + p["x0"] * math.cos(p["x0"]) for p in PRODUCT_POINTS]
    assert diagnose_points(analyses=analyses, part="x.grad", answers=right, rel_tol=1e-4, abs_tol=1e-6,
                           points=PRODUCT_POINTS).correct


SCALED = "w = torch.tensor(w0, requires_grad=True)\nz = torch.sin(w * c)\nz.backward()\n"
SCALED_POINTS = evaluation_points(params={"w0": 0.7, "c": 2.5}, ranges={}, count=5, seed="scaled", vary=["w0", "c"])


@pytest.mark.parametrize(("formula", "rule"), [
    (lambda w, c: math.cos(c * w), "generic_one"),  # the chain factor c forgotten
    (lambda w, c: c * math.sin(c * w), "sin_itself"),
    (lambda w, c: c * math.cos(w), "sin_inner_argument"),
])
def test_a_slip_is_named_when_a_python_number_parameter_varies_between_points(formula: Formula, rule: str) -> None:
    """z = sin(w·c) with c a float parameter that varies: each point wrote c by its value ("right one is
    2.5", then "3.1"), so no slip matched at every point and all three were 'no typical mistake'."""
    analyses = analyses_at(SCALED, SCALED_POINTS, ["w.grad"])
    answers = [formula(point["w0"], point["c"]) for point in SCALED_POINTS]
    diagnosis = diagnose_points(analyses=analyses, part="w.grad", answers=answers, rel_tol=1e-4, abs_tol=1e-6,
                                points=SCALED_POINTS)
    assert (diagnosis.kind, diagnosis.detail["rule"]) == ("wrong_local_derivative", rule)
    assert "w·c" in diagnosis.message or "c = 2.5" in diagnosis.message  # c by its name, not only its value


QUOTIENT = "x = torch.tensor(x0, requires_grad=True)\nz = torch.exp(x) / (1 + x ** 2)\nz.backward()\n"
QUOTIENT_POINTS = evaluation_points(params={"x0": 0.7}, ranges={}, count=5, seed="quotient-rule")


@pytest.mark.parametrize(("formula", "rule"), [
    (lambda x: math.exp(x) / (2 * x), "quotient_rule"),  # u′/v′
    (lambda x: (math.exp(x) * (1 + x * x) - math.exp(x) * 2 * x) / (1 + x * x), "quotient_unsquared"),
])
def test_the_quotient_rule_broken_is_named(formula: Callable[[float], float], rule: str) -> None:
    """d(eˣ/(1 + x²))/dx as eˣ/(2x), or with the denominator not squared: both were 'no typical mistake'."""
    analyses = analyses_at(QUOTIENT, QUOTIENT_POINTS, ["x.grad"])
    diagnosis = diagnose_points(analyses=analyses, part="x.grad", answers=[formula(p["x0"]) for p in QUOTIENT_POINTS],
                                rel_tol=1e-4, abs_tol=1e-6, points=QUOTIENT_POINTS)
    assert (diagnosis.kind, diagnosis.detail.get("rule")) == ("product_of_paths", rule)
    assert "The quotient rule: " in diagnosis.message
