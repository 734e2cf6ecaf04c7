"""Symbolic answers: safe parsing, evaluation and equivalence (no Django, no torch)."""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable
from typing import Any

import pytest
import sympy

from chainrule.answers.formula_parse import MAX_DEPTH, SymbolicError, parse_expression
from chainrule.answers.formula_sympy import (
    evaluate,
    expressions_equivalent,
    formula_expression,
    sample_points,
    variable_symbol,
)

VARIABLES = ["x", "y"]
x, y = variable_symbol("x"), variable_symbol("y")
POINTS = [{"x": 2.0, "y": 3.0}, {"x": -1.5, "y": 0.7}]


def parse(text: str) -> sympy.Expr:
    return formula_expression(parse_expression(text, variables=VARIABLES))


def timed(action: Callable[[], Any], limit: float = 3.0) -> Any:
    """A guard against unbounded work (a hang or seconds of SymPy), not a speed figure: bench/ measures speed."""
    start = time.perf_counter()
    try:
        return action()
    finally:
        assert time.perf_counter() - start < limit


def sigmoid(arg: sympy.Expr) -> sympy.Expr:
    return 1 / (1 + sympy.exp(-arg))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("y + 2*x", y + 2 * x),
        ("2x + 3", 2 * x + 3),
        ("4 - 3x^2", 4 - 3 * x**2),
        ("x*(1 - tanh(x)^2)", x * (1 - sympy.tanh(x) ** 2)),
        ("2*x*y", 2 * x * y),
        ("exp(-x)", sympy.exp(-x)),
        ("1/(1+exp(-x))", 1 / (1 + sympy.exp(-x))),
        ("sigmoid(x)*(1-sigmoid(x))", sigmoid(x) * (1 - sigmoid(x))),
        ("sqrt(x)", sympy.sqrt(x)),
        ("log(x)", sympy.log(x)),
        ("ln(x)", sympy.log(x)),
        ("sin(x) + cos(y) - tan(x)", sympy.sin(x) + sympy.cos(y) - sympy.tan(x)),
        ("pi*x + e", sympy.pi * x + sympy.E),
        ("e^x", sympy.exp(x)),
        ("relu(x)", sympy.Max(0, x)),
        ("step(x)", sympy.Heaviside(x)),
        ("heaviside(x) + Heaviside(y)", sympy.Heaviside(x) + sympy.Heaviside(y)),
        ("abs(x) * sign(y)", sympy.Abs(x) * sympy.sign(y)),
        ("sech(x)^2", sympy.sech(x) ** 2),
        ("x**2", x**2),
    ],
)
def test_it_parses_the_accepted_forms(text: str, expected: sympy.Expr) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2x", 2 * x),
        ("3x^2", 3 * x**2),
        ("x y", x * y),
        ("2xy", 2 * x * y),
        ("2xy^2", 2 * x * y**2),
        ("2(x+1)", 2 * (x + 1)),
        ("x(1-x)", x * (1 - x)),
        ("(x+1)(x-1)", (x + 1) * (x - 1)),
        ("2 sin(x)cos(x)", 2 * sympy.sin(x) * sympy.cos(x)),
        ("2e^x", 2 * sympy.exp(x)),
    ],
)
def test_it_reads_implicit_multiplication(text: str, expected: sympy.Expr) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("-x^2", -(x**2)),
        ("2^-x", 2 ** (-x)),
        ("x^2^3", x**8),
        ("x/2y", x * y / 2),  # left to right, as in Python
        ("--x", x),
        ("x * -y", -x * y),
        ("0.5x", x / 2),
        (".5*x", x / 2),
        ("1e-3 * x", x / 1000),
        ("2.5E2", sympy.Integer(250)),
        ("−x·y", -x * y),
        ("x²", x**2),
    ],
)
def test_it_follows_precedence_and_keeps_numbers_exact(text: str, expected: sympy.Expr) -> None:
    assert parse(text) == expected


def test_it_allows_nesting_up_to_the_limit() -> None:
    assert parse("(" * MAX_DEPTH + "x" + ")" * MAX_DEPTH) == x


def test_it_never_evaluates_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("eval-like call on student text")

    monkeypatch.setattr(builtins, "eval", forbidden)
    monkeypatch.setattr(builtins, "exec", forbidden)
    monkeypatch.setattr(sympy.parsing.sympy_parser, "parse_expr", forbidden)
    assert parse("sigmoid(x)*(1-sigmoid(x)) + 2xy^2") == sigmoid(x) * (1 - sigmoid(x)) + 2 * x * y**2
    with pytest.raises(SymbolicError):
        parse("__import__('os').system('true')")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("__import__('os')", "Quotes are not allowed"),
        ("__import__", "Unknown name '__import__'"),
        ("x.grad", "attribute access"),
        ("x.__class__", "attribute access"),
        ("1.2.3", "decimal point"),
        ('"x"', "Quotes are not allowed"),
        ("relu'(x)", "Quotes are not allowed"),
        ("[x, y]", "round parentheses"),
        ("{x}", "round parentheses"),
        ("z + x", "Unknown name 'z' at position 1. Allowed: numbers, the variables x, y"),
        ("f(x)", "Unknown name 'f'"),
        ("x" * 501, "too long"),
        ("x + " * 250_000 + "x", "too long"),  # 1 MB
        ("(" * 10_000 + "x" + ")" * 10_000, "too long"),
        ("(" * (MAX_DEPTH + 1) + "x" + ")" * (MAX_DEPTH + 1), "nested too deeply"),
        ("sin(" * (MAX_DEPTH + 1) + "x" + ")" * (MAX_DEPTH + 1), "nested too deeply"),
        ("x^" * (MAX_DEPTH + 1) + "x", "nested too deeply"),
        ("1" * 31 + "*x", "at most 30 digits"),
        ("1e999", "Powers of ten"),
        ("x^99999999", "Exponents are limited"),
        ("10^10^10", "Exponents are limited"),
        ("x^-101", "Exponents are limited"),
        ("(x^50)^3", "after combining powers"),
        ("x^exp(exp(exp(exp(10))))", "no finite real value"),
        ("x^exp(300)", "Exponents are limited"),
        ("(2^100)^100", "too large"),
        ("2^99*3^99*5^99", "too large"),
        ("exp(exp(exp(exp(10))))", "no finite real value"),
        ("x/0", "Division by zero"),
        ("x/(1-1)", "Division by zero"),
        ("0^-1", "Division by zero"),
        ("nan", "'nan' is not allowed"),
        ("inf * x", "'inf' is not allowed"),
        ("zoo", "'zoo' is not allowed"),
        ("log(0)", "no finite real value"),
        ("tan(pi/2)", "no finite real value"),
        ("sqrt(-1) * x", "no finite real value"),
        ("x, y", "exactly one argument"),
        ("dz/dx = y + 2x", "without '='"),
        ("sin x", "Write sin(...) with parentheses"),
        ("x 2", "Write '*' before the number 2"),
        ("x +", "ends too early"),
        ("* x", "Unexpected '*'"),
        ("(x + 1", "Missing ')'"),
        ("x + 1)", "Unmatched ')'"),
        ("x; y", "not allowed"),
        ("x @ y", "not allowed"),
    ],
)
def test_it_rejects_malformed_and_malicious_input_fast(text: str, message: str) -> None:
    with pytest.raises(SymbolicError) as error:
        timed(lambda: parse(text))
    assert message in str(error.value)


def test_it_rejects_with_a_value_error_subclass() -> None:
    with pytest.raises(ValueError):
        parse("x.grad")


def test_it_reads_long_chains_of_signs_without_recursion() -> None:
    assert timed(lambda: parse("-" * 498 + "x")) == x


def test_it_parses_large_valid_formulas_fast() -> None:
    nested = "sigmoid(" * 25 + "x" + ")" * 25
    polynomial = " + ".join(f"{i}x^{i % 9}y^{i % 7}" for i in range(1, 40))
    assert timed(lambda: parse(nested)).has(sympy.exp)
    assert len(timed(lambda: parse(polynomial)).args) > 30


def test_it_refuses_variable_names_that_would_shadow_functions() -> None:
    with pytest.raises(ValueError, match="variable name"):
        parse_expression("x", variables=["exp"])


def test_it_evaluates_to_floats() -> None:
    assert evaluate(parse("y + 2x"), {"x": 2.0, "y": 3.0}) == 7.0
    assert evaluate(parse("sigmoid(x)"), {"x": 0.0}) == 0.5
    assert evaluate(parse("relu(x) + step(y)"), {"x": -1.0, "y": 2.0}) == 1.0
    assert evaluate(parse("step(x)"), {"x": 0.0}) == 0.5  # SymPy's Heaviside(0)
    assert evaluate(parse("pi*e"), {}) == pytest.approx(8.5397342)


@pytest.mark.parametrize(
    ("text", "point"),
    [
        ("log(x)", {"x": -1.0}),
        ("sqrt(x)", {"x": -4.0}),
        ("1/x", {"x": 0.0}),
        ("x^(1/3)", {"x": -8.0}),
        ("exp(x)", {"x": 1000.0}),
        ("exp(exp(x))", {"x": 10.0}),
    ],
)
def test_it_evaluates_to_none_where_undefined(text: str, point: dict[str, float]) -> None:
    assert evaluate(parse(text), point) is None


@pytest.mark.parametrize(
    ("answer", "reference"),
    [
        ("y + 2*x", "2x + y"),
        ("x*(1 - tanh(x)^2)", x * sympy.sech(x) ** 2),
        ("sigmoid(x)*(1-sigmoid(x))", "exp(-x)/(1+exp(-x))^2"),
        ("(x+1)^2", "x^2 + 2x + 1"),
        ("cos(x)^2 + sin(x)^2", "1"),
        ("tanh(x)", "(exp(2x) - 1)/(exp(2x) + 1)"),
        ("relu(x)", "x*step(x)"),  # SymPy cannot prove it: the numbers decide
        ("0.5*y", "y/2"),
        ("x + log(6)", "x + log(2) + log(3)"),  # a zero SymPy does not see: not a proof of difference
    ],
)
def test_it_accepts_equivalent_answers(answer: str, reference: str | sympy.Expr) -> None:
    expected = parse(reference) if isinstance(reference, str) else reference
    verdict = timed(lambda: expressions_equivalent(parse(answer), expected, variables=VARIABLES, points=POINTS), 2.0)
    assert verdict is True


@pytest.mark.parametrize(
    ("answer", "reference"),
    [
        ("y*2*x", "y + 2*x"),  # multiplied the parallel paths
        ("y - 2x", "y + 2*x"),
        ("x*(1 - tanh(x))", "x*(1 - tanh(x)^2)"),
        ("2x + 1e-12", "2x"),  # inside the tolerance, but SymPy proves a constant gap
        ("0.3333333 * x", "x/3"),  # symbolic answers are exact
        ("abs(x)", "x"),  # agrees at positive points only
    ],
)
def test_it_rejects_different_answers(answer: str, reference: str) -> None:
    verdict = timed(lambda: expressions_equivalent(parse(answer), parse(reference), variables=VARIABLES, points=POINTS))
    assert verdict is False


def test_it_compares_with_hand_built_references() -> None:
    plain_x = sympy.Symbol("x")  # no real=True, as an instructor might write it
    answer = parse("1 - tanh(x)^2")
    assert expressions_equivalent(answer, sympy.sech(plain_x) ** 2, variables=["x"], points=[{"x": 0.3}])


def test_it_rejects_answers_in_unknown_symbols() -> None:
    answer = sympy.Symbol("w") + x
    assert not expressions_equivalent(answer, x, variables=["x"], points=[{"x": 1.0}])


def test_it_needs_a_proof_when_both_sides_are_undefined_at_every_point() -> None:
    points = [{"x": -1.0}, {"x": -2.0}, {"x": -3.0}, {"x": -4.0}, {"x": -5.0}]
    assert expressions_equivalent(parse("log(x)"), parse("ln(x)"), variables=["x"], points=points)
    assert not expressions_equivalent(parse("log(x)"), parse("2log(x)"), variables=["x"], points=points)


def test_it_tops_up_to_five_deterministic_points_near_the_given_ones() -> None:
    samples = sample_points([{"x": 2.0, "y": -3.0}], VARIABLES)
    assert len(samples) == 5
    assert samples[0] == {"x": 2.0, "y": -3.0}
    assert all(point["x"] > 2.0 and point["y"] < -3.0 for point in samples[1:])
    assert sample_points([{"x": 2.0, "y": -3.0}], VARIABLES) == samples
    assert len(sample_points([], VARIABLES)) == 5


def test_it_catches_a_difference_the_given_point_hides() -> None:
    # At x = 1 both are 1; the extra points tell them apart.
    assert not expressions_equivalent(parse("x^2"), parse("x"), variables=["x"], points=[{"x": 1.0}])


def test_it_leaves_large_differences_to_the_numbers_quickly() -> None:
    answer = parse("(x+y+1)^20 * sigmoid(x) * tanh(y)")
    reference = parse("tanh(y) * (y+x+1)^20 / (1 + exp(-x))")
    assert timed(lambda: expressions_equivalent(answer, reference, variables=VARIABLES, points=POINTS), 2.0)
