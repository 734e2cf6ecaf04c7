"""Value and equivalence of symbolic answers such as `y + 2*x`.

Text is parsed into a plain `Formula` by `chainrule.answers.formula_parse.parse_expression`
(no SymPy); `formula_expression` turns one into SymPy, which only the sandbox job
(`chainrule.answers.formula_job`) and trusted callers may do. Values are computed in plain floats
(SymPy's `evalf` can spend forever on `exp(exp(exp(exp(10))))`), and an answer is
equivalent to the reference when the numbers agree at every point and SymPy does
not prove the two different.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import sympy
from sympy.polys.polyerrors import PolynomialError

from chainrule.answers.formula_parse import Formula

MIN_POINTS = 5
MAX_EXPANSION_DEGREE = 24


def variable_symbol(name: str) -> sympy.Symbol:
    """The symbol every parsed answer uses for `name`: real, like a tensor's value."""
    return sympy.Symbol(name, real=True)


def _sign(value: float) -> float:
    return math.copysign(1.0, value) if value else 0.0


def _heaviside(values: list[float]) -> float:
    argument, at_zero = values[0], values[-1] if len(values) > 1 else 0.5
    return 0.0 if argument < 0 else 1.0 if argument > 0 else at_zero


def _first(function: Callable[[float], float]) -> Callable[[list[float]], float]:
    return lambda values: function(values[0])


_FLOAT_FUNCTIONS: dict[object, Callable[[list[float]], float]] = {
    sympy.Add: math.fsum, sympy.Mul: math.prod, sympy.Pow: lambda values: math.pow(values[0], values[1]),
    sympy.Max: max, sympy.Min: min, sympy.Heaviside: _heaviside,
    sympy.sin: _first(math.sin), sympy.cos: _first(math.cos), sympy.tan: _first(math.tan),
    sympy.sinh: _first(math.sinh), sympy.cosh: _first(math.cosh), sympy.tanh: _first(math.tanh),
    sympy.sech: _first(lambda value: 1.0 / math.cosh(value)), sympy.exp: _first(math.exp),
    sympy.log: _first(math.log), sympy.Abs: _first(abs), sympy.sign: _first(_sign),
}  # fmt: skip


def float_value(expr: sympy.Expr, point: Mapping[str, float]) -> float:
    """Value of `expr` with `point[name]` for each variable. Raises ArithmeticError,
    ValueError or TypeError where it is undefined or not real; may return inf/nan."""
    if expr.is_Symbol:
        return float(point[expr.name])
    if expr.is_Number or expr.is_NumberSymbol:
        return float(expr)
    combine = _FLOAT_FUNCTIONS.get(expr.func)
    if combine is None or (expr.func is sympy.log and len(expr.args) != 1):
        return _sympy_value(expr, point)
    return combine([float_value(arg, point) for arg in expr.args])


def _sympy_value(expr: sympy.Expr, point: Mapping[str, float]) -> float:
    """Fallback for functions outside the parser's whitelist (a hand-built reference)."""
    values = {symbol: sympy.Float(point[symbol.name]) for symbol in expr.free_symbols}
    result = complex(expr.subs(values).evalf())
    if abs(result.imag) > 1e-12 * max(1.0, abs(result.real)):
        raise ValueError("not a real number")
    return result.real


def evaluate(expr: sympy.Expr, point: Mapping[str, float]) -> float | None:
    """Float value at `point` (variable name -> value); None where undefined, complex
    or not finite. A variable missing from `point` is a caller error (KeyError)."""
    try:
        value = float_value(expr, point)
    except (ArithmeticError, ValueError, TypeError):
        return None
    return value if math.isfinite(value) else None


def expressions_equivalent(
    answer: sympy.Expr,
    reference: sympy.Expr,
    *,
    variables: list[str],
    points: list[dict[str, float]],
    rel_tol: float = 1e-6,
    abs_tol: float = 1e-9,
) -> bool:
    """True when the answer matches the reference at every point (the given ones,
    plus nearby ones up to MIN_POINTS) and SymPy does not prove them different.
    Where simplify is inconclusive (or too costly to try) the numbers decide."""
    answer, reference = _with_variable_symbols(answer, variables), _with_variable_symbols(reference, variables)
    if not (answer.free_symbols | reference.free_symbols) <= {variable_symbol(name) for name in variables}:
        return False
    numeric = _numeric_agreement(answer, reference, sample_points(points, variables), rel_tol, abs_tol)
    if numeric is False:
        return False  # the usual wrong answer: never pay for simplify
    symbolic = difference_is_zero(answer - reference)
    if numeric is None:  # undefined at every point: only a proof will do
        return symbolic is True
    return symbolic is not False


def _with_variable_symbols(expr: sympy.Expr, variables: list[str]) -> sympy.Expr:
    """Same-named symbols with other assumptions (a hand-built `Symbol('x')`) would never cancel."""
    names = set(variables)
    return expr.xreplace({s: variable_symbol(s.name) for s in expr.free_symbols if s.name in names})


def _numeric_agreement(
    answer: sympy.Expr, reference: sympy.Expr, points: list[dict[str, float]], rel_tol: float, abs_tol: float
) -> bool | None:
    """False at the first disagreement; None when both are undefined everywhere."""
    compared = 0
    for point in points:
        got, expected = evaluate(answer, point), evaluate(reference, point)
        if got is None and expected is None:
            continue
        if got is None or expected is None or not math.isclose(got, expected, rel_tol=rel_tol, abs_tol=abs_tol):
            return False
        compared += 1
    return True if compared else None


def sample_points(points: list[dict[str, float]], variables: list[str]) -> list[dict[str, float]]:
    """The given points, then deterministic ones near them until there are MIN_POINTS."""
    samples = [dict(point) for point in points]
    anchors = samples or [{name: 1.0 for name in variables}]
    rng = random.Random(len(samples))  # fixed seed: the same answer always gets the same verdict
    while len(samples) < MIN_POINTS:
        anchor = anchors[len(samples) % len(anchors)]
        samples.append({name: _nearby(anchor.get(name, 1.0), rng) for name in variables})
    return samples


def _nearby(value: float, rng: random.Random) -> float:
    """Move away from zero on the same side, so domains like log(x) or sqrt(x) stay valid."""
    direction = -1.0 if value < 0 else 1.0
    return value + direction * max(1.0, abs(value)) * rng.uniform(0.1, 0.9)


def difference_is_zero(difference: sympy.Expr) -> bool | None:
    """True if SymPy reduces `difference` to 0, False if to a nonzero rational
    function (exact answers differ), None when undecided or too large to try.
    Size caps rather than a clock bound the time, so the verdict is the same on
    a loaded machine (a regrade must not flip it)."""
    if difference == 0:
        return True
    if _expansion_degree(difference) > MAX_EXPANSION_DEGREE:
        return None
    ops = sympy.count_ops(difference)
    for max_ops, step in _REDUCTIONS:
        if ops > max_ops:
            continue
        try:
            reduced = step(difference)
        except (PolynomialError, NotImplementedError, TypeError, ValueError):
            continue
        if reduced == 0:
            return True
        if _nonzero_rational_function(reduced):
            return False
    return None


def _nonzero_rational_function(expr: sympy.Expr) -> bool:
    """A quotient of polynomials with rational coefficients is zero only if its
    cancelled form is: so `2x + 1e-12` vs `2x`, or 0.3333333*x vs x/3, differ."""
    for node in sympy.preorder_traversal(expr):
        if not (node.is_Symbol or node.is_Rational or node.is_Add or node.is_Mul or _integer_power(node)):
            return False  # log(6) - log(2) - log(3) is zero, but not visibly so
    return bool(sympy.cancel(expr) != 0)


def _integer_power(node: sympy.Basic) -> bool:
    return bool(node.is_Pow and node.exp.is_Integer)


def _cancel_in_exponentials(expr: sympy.Expr) -> sympy.Expr:
    """tanh, sech, sigmoid and trig forms become rational functions of exponentials."""
    return sympy.cancel(expr.rewrite(sympy.exp))


def _expansion_degree(expr: sympy.Expr) -> int:
    """Rough size of what cancel would expand: (x + y + 1)^50 has thousands of terms."""
    return sum(
        abs(int(power.exp)) for power in expr.atoms(sympy.Pow) if power.exp.is_Integer and not power.base.is_Atom
    )


# (largest count_ops it is tried on, reduction): measured to stay under ~0.2 s each
_REDUCTIONS: tuple[tuple[int, Callable[[sympy.Expr], sympy.Expr]], ...] = (
    (40, sympy.cancel),
    (40, _cancel_in_exponentials),
    (14, sympy.simplify),
)


_SYMPY_FUNCTIONS: dict[str, Callable[[sympy.Expr], sympy.Expr]] = {
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan,
    "sinh": sympy.sinh, "cosh": sympy.cosh, "tanh": sympy.tanh, "sech": sympy.sech,
    "exp": sympy.exp, "log": sympy.log, "ln": sympy.log, "sqrt": sympy.sqrt,
    "sigmoid": lambda arg: 1 / (1 + sympy.exp(-arg)), "relu": lambda arg: sympy.Max(0, arg),
    "abs": sympy.Abs, "sign": sympy.sign,
    "step": sympy.Heaviside, "heaviside": sympy.Heaviside,
}  # fmt: skip


def formula_expression(formula: Formula) -> sympy.Expr:
    """The SymPy expression of a parsed formula. Building it runs SymPy's assumption
    system, whose cost has no useful bound: call this only inside the sandbox
    (chainrule.answers.formula_job) or on trusted text."""
    op, args = formula.op, [formula_expression(arg) for arg in formula.args]
    if op == "number":
        assert isinstance(formula.value, Fraction)
        return sympy.Rational(formula.value.numerator, formula.value.denominator)
    if op == "variable":
        return variable_symbol(str(formula.value))
    if op == "constant":
        return sympy.pi if formula.value == "pi" else sympy.E
    if op == "add":
        return sympy.Add(*args)
    if op == "mul":
        return sympy.Mul(*args)
    if op == "neg":
        return -args[0]
    if op == "recip":
        return 1 / args[0]
    if op == "pow":
        return sympy.Pow(args[0], args[1])
    return _SYMPY_FUNCTIONS[op](args[0])


def equivalence_reply(job: Any) -> dict[str, Any]:
    """Runs inside the sandbox: {"equivalent": bool}."""
    answer, reference = Formula.from_json(job["answer"]), Formula.from_json(job["reference"])
    variables = [str(name) for name in job["variables"]]
    points = [{name: float(point[name]) for name in variables} for point in job["points"]]
    return {"equivalent": formulas_equivalent(answer, reference, variables, points)}


def formulas_equivalent(answer: Formula, reference: Formula, variables: list[str],
                        points: list[dict[str, float]]) -> bool:
    """In this process, without a limit: for the sandbox job itself and for trusted callers
    (tests, the command line). The grader uses a sandboxed `Equivalence` instead."""
    return expressions_equivalent(formula_expression(answer), formula_expression(reference),
                                  variables=variables, points=points)
