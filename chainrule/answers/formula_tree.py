"""A parsed formula as plain Python objects (`Formula`) and its value in floats.

Produced by `chainrule.answers.formula_parse.parse_expression`; no SymPy here, so the web
and the worker can use it at bounded cost (at most MAX_NODES nodes per formula).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

MAX_TREE_DEPTH = 128  # bounds from_json's recursion; the parser's own trees are far shallower


@dataclass(frozen=True)
class Formula:
    """`op` is "number" (value: Fraction), "variable" or "constant" (value: its name),
    "add" / "mul" (n-ary), "neg", "recip" (1/arg), "pow" (base, exponent) or a function name."""

    op: str
    args: tuple[Formula, ...] = ()
    value: Fraction | str | None = None

    @property
    def constant(self) -> bool:
        """No variable anywhere below (its value is the same at every point)."""
        return self.op != "variable" and all(arg.constant for arg in self.args)

    def to_json(self) -> Any:
        """Plain JSON for the sandbox job: [op, value, *args], numbers as "p/q" text."""
        value = f"{self.value.numerator}/{self.value.denominator}" if isinstance(self.value, Fraction) else self.value
        return [self.op, value, *(arg.to_json() for arg in self.args)]

    @classmethod
    def from_json(cls, data: Any, *, depth: int = 0) -> Formula:
        """The inverse of `to_json`, for untrusted input: only known ops, bounded depth."""
        if not isinstance(data, list) or len(data) < 2 or depth > MAX_TREE_DEPTH:
            raise ValueError("not a formula")
        op, value, *args = data
        if op not in _ARITIES or (_ARITIES[op] is not None and len(args) != _ARITIES[op]):
            raise ValueError(f"unknown formula node {op!r}")
        if op == "number":
            parsed: Fraction | str | None = Fraction(str(value))
        elif op in ("variable", "constant"):
            if not isinstance(value, str) or (op == "constant" and value not in CONSTANTS):
                raise ValueError("bad name")
            parsed = value
        else:
            parsed = None
        return cls(op, tuple(cls.from_json(arg, depth=depth + 1) for arg in args), parsed)


def _tan(value: float) -> float:
    if abs(math.cos(value)) < 1e-15:  # tan(pi/2): a pole, whatever rounding makes of it
        raise ValueError("tan is undefined here")
    return math.tan(value)


def _heaviside(value: float) -> float:
    return 0.0 if value < 0 else 1.0 if value > 0 else 0.5


def _sigmoid(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-value)) if value >= 0 else math.exp(value) / (1.0 + math.exp(value))


FUNCTIONS: dict[str, Callable[[float], float]] = {
    "sin": math.sin, "cos": math.cos, "tan": _tan,
    "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh, "sech": lambda v: 1.0 / math.cosh(v),
    "exp": math.exp, "log": math.log, "ln": math.log, "sqrt": math.sqrt,
    "sigmoid": _sigmoid, "relu": lambda v: max(0.0, v),
    "abs": abs, "sign": lambda v: math.copysign(1.0, v) if v else 0.0,
    "step": _heaviside, "heaviside": _heaviside,
}  # fmt: skip
CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e}
_ARITIES: dict[str, int | None] = {"number": 0, "variable": 0, "constant": 0, "add": None, "mul": None,
                                   "neg": 1, "recip": 1, "pow": 2, **dict.fromkeys(FUNCTIONS, 1)}


def formula_value(formula: Formula, point: Mapping[str, float]) -> float | None:
    """Float value with `point[name]` for each variable; None where undefined, not real or
    not finite. Plain floats over at most MAX_NODES nodes: cheap for any formula that parsed.
    A variable missing from `point` is a caller error (KeyError)."""
    try:
        value = _float(formula, point)
    except (ArithmeticError, ValueError, TypeError):
        return None
    return value if math.isfinite(value) else None


def _float(node: Formula, point: Mapping[str, float]) -> float:
    op = node.op
    if op == "number":
        assert isinstance(node.value, Fraction)
        return float(node.value)
    if op == "variable":
        return float(point[str(node.value)])
    if op == "constant":
        return CONSTANTS[str(node.value)]
    values = [_float(arg, point) for arg in node.args]
    if op == "add":
        return math.fsum(values)
    if op == "mul":
        return math.prod(values)
    if op == "neg":
        return -values[0]
    if op == "recip":
        return 1.0 / values[0]
    if op == "pow":
        return math.pow(values[0], values[1])
    return FUNCTIONS[op](values[0])


def formula_variables(formula: Formula) -> set[str]:
    if formula.op == "variable":
        return {str(formula.value)}
    return set().union(*(formula_variables(arg) for arg in formula.args)) if formula.args else set()
