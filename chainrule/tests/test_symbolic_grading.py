"""Symbolic parts: a formula evaluated at every point and diagnosed there,
with SymPy equivalence when the author gives the derivative as a formula."""

from __future__ import annotations

import time
from typing import Any

import pytest

from chainrule import Diagnosis
from chainrule.answers.formula_grading import grade_symbolic, reference_formula_problem
from chainrule.answers.formula_parse import SymbolicError
from chainrule.answers.formula_sympy import formulas_equivalent
from chainrule.tests.point_analyses import seed_analyses, seed_points

WALKTHROUGH = {"x": "x0", "y": "y0"}


def grade(text: str, *, slug: str = "visual-walkthrough", part: str = "x.grad",
          variables: dict[str, str] | None = None, reference: str | None = None, **options: Any) -> Diagnosis:
    points = seed_points(slug, **options)
    return grade_symbolic(text=text, variables=variables or WALKTHROUGH, analyses=seed_analyses(slug, points),
                          points=points, part=part, reference_formula=reference, rel_tol=1e-4, abs_tol=1e-6,
                          equivalence=formulas_equivalent)


@pytest.mark.parametrize("text", ["y + 2x", "2*x + y", "y+2 x", "(y + x) + x", "2x + y^1"])
def test_it_accepts_the_derivative_however_written(text: str) -> None:
    assert grade(text).correct
    assert grade(text, reference="y + 2*x").detail["symbolic_equivalent"] is True


def test_it_accepts_the_one_path_gradient_of_y() -> None:
    assert grade("x", part="y.grad").correct


def test_it_names_the_missing_multiply_path() -> None:
    diagnosis = grade("2x")
    assert (diagnosis.kind, diagnosis.paths) == ("missing_path", [["x", "mul", "add", "z"]])
    assert "x → mul → add → z" in diagnosis.message
    assert "Your formula" in diagnosis.message and "x.grad" not in diagnosis.message  # the student wrote no .grad


def test_it_finds_the_flipped_sign() -> None:
    diagnosis = grade("y - 2x", reference="y + 2*x")
    assert (diagnosis.kind, diagnosis.paths) == ("sign_error", [["x", "pow", "add", "z"]])
    assert "symbolic_equivalent" not in diagnosis.detail  # wrong numbers never pay for SymPy


def test_it_accepts_the_negative_gradient_and_names_the_wrong_power_rule() -> None:
    assert grade("4 - 3x^2", slug="negative-gradient", variables={"x": "x0"}, reference="4 - 3*x^2").correct
    diagnosis = grade("4 - 3x", slug="negative-gradient", variables={"x": "x0"})
    assert diagnosis.kind == "wrong_local_derivative"
    assert "uses 3·x" in diagnosis.message and "local derivative of pow" in diagnosis.message
    assert "3·x^2" in diagnosis.message


def test_it_grades_a_vector_gradient_entrywise() -> None:
    options: dict[str, Any] = {"slug": "non-scalar", "variables": {"x": "xs"}, "vary": ["xs"]}
    assert grade("2x", **options).correct
    assert grade("x", **options).kind == "forward_value"


def test_a_formula_undefined_at_a_point_is_wrong_with_a_clear_message() -> None:
    diagnosis = grade("y + 2x + 1/(x - 2)")
    assert (diagnosis.kind, diagnosis.detail["reason"]) == ("unknown", "undefined")
    assert "x = 2, y = 3" in diagnosis.message and "divides by zero" in diagnosis.message
    assert "x0" not in diagnosis.message and "y0" not in diagnosis.message  # the parameter table's names


def test_matching_at_the_points_is_not_enough_when_sympy_proves_a_difference() -> None:
    points = seed_points("visual-walkthrough")
    vanishing = "*".join(f"(x - {point['x0']})" for point in points)
    assert grade(f"y + 2x + {vanishing}").correct  # numbers alone cannot tell
    diagnosis = grade(f"y + 2x + {vanishing}", reference="y + 2*x")
    assert (diagnosis.correct, diagnosis.kind, diagnosis.detail["reason"]) == (False, "unknown", "not_equivalent")


def test_an_authors_formula_that_autograd_contradicts_is_reported() -> None:
    points = seed_points("visual-walkthrough")
    analyses = seed_analyses("visual-walkthrough", points)
    common: dict[str, Any] = {"variables": WALKTHROUGH, "analyses": analyses, "points": points, "part": "x.grad",
                              "rel_tol": 1e-4, "abs_tol": 1e-6}
    assert reference_formula_problem(formula="y + 2*x", **common) is None
    problem = reference_formula_problem(formula="y + 3*x", **common)
    assert problem is not None and "x0 = 2, y0 = 3" in problem


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("foo(x) + y", "Unknown name 'foo'"),
        ("__import__('os').system('ls')", "not allowed"),
        ("z + 1", "Unknown name 'z'"),
        ("x" * 1_000_000, "too long"),
        ("(" * 300 + "x" + ")" * 300, "too long"),
        ("(" * 40 + "x" + ")" * 40, "nested too deeply"),
        ("", "empty"),
        ("x.grad", "attribute access"),
    ],
)
def test_unreadable_formulas_raise_a_clear_error_quickly(text: str, words: str) -> None:
    start = time.perf_counter()
    with pytest.raises(SymbolicError, match=words):
        grade(text)
    assert time.perf_counter() - start < 1.0


def test_a_variable_bound_to_no_parameter_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="not a parameter"):
        grade("x", variables={"x": "nope"})


def test_a_number_typed_for_a_variable_or_for_the_whole_formula_is_told_so() -> None:
    """'y + 4' for y + 2x at x = 2 (x typed as its value), and '7' (the seed point's number): both were 'no
    typical mistake explains it', which does not say the formula must change with x."""
    typed_in = grade("y + 4", reference="y + 2*x")
    assert not typed_in.correct and typed_in.detail["missing_variables"] == ["x"]
    assert typed_in.message.startswith("Your formula does not use x, but the gradient depends on it")
    number = grade("7", reference="y + 2*x")
    assert number.message.startswith("Your formula is a number: it gives the same value at every point")
