"""Safe parsing of a student's symbolic answer (`y + 2x`, `x*(1 - tanh(x)^2)`)
into a SymPy expression.

SymPy's own `parse_expr`/`sympify` run `eval` on the text, so untrusted input
never reaches them. A small tokenizer and a recursive-descent parser build SymPy
objects directly from a whitelist: numbers, the assignment's variables, `pi`,
`e` and a few functions. Every size is capped (length, nesting, digits,
exponents, node count) so a hostile formula is rejected in milliseconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction

import sympy

from chainrule.symbolic import evaluate, variable_symbol

MAX_LENGTH = 500
MAX_DEPTH = 30
MAX_NUMBER_DIGITS = 30
MAX_EXPONENT = 100
MAX_CONSTANT_DIGITS = 100
MAX_NODES = 500


class SymbolicError(ValueError):
    """An answer that cannot be read; the message is written for the student."""


FUNCTIONS: dict[str, Callable[[sympy.Expr], sympy.Expr]] = {
    "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan,
    "sinh": sympy.sinh, "cosh": sympy.cosh, "tanh": sympy.tanh, "sech": sympy.sech,
    "exp": sympy.exp, "log": sympy.log, "ln": sympy.log, "sqrt": sympy.sqrt,
    "sigmoid": lambda arg: 1 / (1 + sympy.exp(-arg)), "relu": lambda arg: sympy.Max(0, arg),
    "abs": sympy.Abs, "sign": sympy.sign,
    "step": sympy.Heaviside, "heaviside": sympy.Heaviside,
}  # fmt: skip
CONSTANTS: dict[str, sympy.Expr] = {"pi": sympy.pi, "e": sympy.E}
_NOT_NUMBERS = {"inf", "infinity", "nan", "oo", "zoo"}
_UNICODE = str.maketrans({"−": "-", "×": "*", "·": "*", "÷": "/", "²": "^2", "³": "^3"})

_TOKEN = re.compile(
    r"(?P<space>\s+)"
    r"|(?P<number>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>\*\*|[-+*/^()])"
)
_QUOTES = "Quotes are not allowed: type the formula itself (write a derivative out in full, not relu')."
_BRACKETS = "Use round parentheses ( ) for grouping; [ ] and { } are not allowed."
_CHARACTER_HINTS = {
    "'": _QUOTES, '"': _QUOTES, "`": _QUOTES,
    "[": _BRACKETS, "]": _BRACKETS, "{": _BRACKETS, "}": _BRACKETS,
    ",": "Each function takes exactly one argument, so ',' is not allowed; write decimals with a point (0.5).",
    "=": "Type only the expression, without '=' (for example `y + 2*x`, not `dz/dx = y + 2*x`).",
    ".": "A '.' may only be the decimal point of a number such as 0.5; attribute access like x.grad is not allowed.",
}  # fmt: skip


def allowed_summary(variables: list[str]) -> str:
    names = ", ".join(variables) if variables else "(none)"
    return (
        f"Allowed: numbers, the variables {names}, the constants pi and e, + - * / ^, "
        f"parentheses and the functions {', '.join(sorted(FUNCTIONS))}."
    )


@dataclass(frozen=True)
class _Token:
    kind: str  # "number", "name" or "op" (operators and parentheses)
    text: str
    position: int  # 1-based column, for messages


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    index = 0
    while index < len(text):
        match = _TOKEN.match(text, index)
        if match is None:
            char = text[index]
            hint = _CHARACTER_HINTS.get(char, f"The character {char!r} is not allowed.")
            raise SymbolicError(f"{hint} (position {index + 1})")
        kind = match.lastgroup or ""
        dot = _glued_dot(text, match, tokens) if kind == "number" else None
        if dot is not None:
            raise SymbolicError(f"{_CHARACTER_HINTS['.']} (position {dot})")
        if kind != "space":
            tokens.append(_Token(kind, match.group(), index + 1))
        index = match.end()
    return tokens


def _glued_dot(text: str, match: re.Match[str], tokens: list[_Token]) -> int | None:
    """Position of the stray dot in `1.2.3` or `x.5`: a typo or attribute access."""
    if text[match.end() : match.end() + 1] == ".":
        return match.end() + 1
    previous = tokens[-1] if tokens else None
    if not match.group().startswith(".") or previous is None:
        return None
    touching = previous.position - 1 + len(previous.text) == match.start()
    glued = touching and (previous.kind in {"name", "number"} or previous.text == ")")
    return match.start() + 1 if glued else None


def _number_value(token: _Token) -> sympy.Rational:
    """Exact rational value, so `0.5*x` and `x/2` are the same expression."""
    mantissa, _, exponent = token.text.lower().partition("e")
    if sum(char.isdigit() for char in mantissa) > MAX_NUMBER_DIGITS:
        raise SymbolicError(f"Numbers may have at most {MAX_NUMBER_DIGITS} digits (position {token.position}).")
    if exponent and abs(int(exponent)) > MAX_EXPONENT:
        raise SymbolicError(f"Powers of ten are limited to e±{MAX_EXPONENT} (position {token.position}).")
    value = Fraction(token.text)
    return sympy.Rational(value.numerator, value.denominator)


def _checked_power(base: sympy.Expr, exponent: sympy.Expr, token: _Token) -> sympy.Expr:
    if exponent.is_number:
        size = evaluate(exponent, {})  # floats: the exponent may be exp(exp(exp(exp(10))))
        if size is None or abs(size) > MAX_EXPONENT:
            raise SymbolicError(f"Exponents are limited to ±{MAX_EXPONENT} (the '^' at position {token.position}).")
        if base.is_zero and exponent.is_negative:
            raise SymbolicError(f"Division by zero: 0 to a negative power (position {token.position}).")
        if base.is_Rational and exponent.is_Rational and _digits(base) * abs(size) > MAX_CONSTANT_DIGITS:
            raise SymbolicError(f"That number is too large (the '^' at position {token.position}).")
    return _checked_constants(sympy.Pow(base, exponent), token)


def _checked_quotient(numerator: sympy.Expr, denominator: sympy.Expr, token: _Token) -> sympy.Expr:
    if denominator.is_zero:
        raise SymbolicError(f"Division by zero (the '/' at position {token.position}).")
    return _checked_constants(numerator / denominator, token)


def _checked_constants(expr: sympy.Expr, token: _Token) -> sympy.Expr:
    """Keep constants small. SymPy tries to factor big integers under roots, and its
    assumption checks evaluate constants with mpmath, which stalls on exp(exp(exp(20)))."""
    for term in sympy.Add.make_args(expr):
        coefficient = term.as_coeff_Mul()[0]
        if coefficient.is_Rational and _digits(coefficient) > MAX_CONSTANT_DIGITS:
            raise SymbolicError(f"That number is too large (position {token.position}).")
    if expr.is_number and evaluate(expr, {}) is None:
        raise SymbolicError(
            f"The part at position {token.position} has no finite real value: it is undefined "
            "(like log(0)), not real (like sqrt(-1)) or too large (beyond about 1e308)."
        )
    return expr


def _checked_result(expr: sympy.Expr) -> sympy.Expr:
    if expr.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo):
        raise SymbolicError("The expression is undefined (for example log(0) or tan(pi/2)).")
    if expr.has(sympy.I):
        raise SymbolicError("The expression is not a real number (for example sqrt(-1) or log(-2)).")
    if any(abs(evaluate(power.exp, {}) or 0) > MAX_EXPONENT for power in expr.atoms(sympy.Pow) if power.exp.is_number):
        raise SymbolicError(f"Exponents are limited to ±{MAX_EXPONENT}, also after combining powers like (x^50)^3.")
    if sum(1 for _ in sympy.preorder_traversal(expr)) > MAX_NODES:
        raise SymbolicError(f"The expression is too large (more than {MAX_NODES} parts).")
    return expr


def _digits(number: sympy.Expr) -> float:
    numerator, denominator = sympy.fraction(number)
    return max(abs(int(numerator)).bit_length(), abs(int(denominator)).bit_length()) * 0.30103


def parse_expression(text: str, *, variables: list[str]) -> sympy.Expr:
    """Read a student's formula in `variables`; raises SymbolicError with a readable message."""
    for name in variables:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name in FUNCTIONS:
            raise ValueError(f"not a usable variable name: {name!r}")
    if len(text) > MAX_LENGTH:
        raise SymbolicError(f"The expression is too long ({len(text)} characters; at most {MAX_LENGTH}).")
    tokens = _tokenize(text.translate(_UNICODE))
    if not tokens:
        raise SymbolicError("The answer is empty. Type an expression such as y + 2*x.")
    return _checked_result(_Parser(tokens, variables).parse())


class _Parser:
    """Grammar (`^` binds tighter than unary minus, as in `-x^2 = -(x^2)`):
    sum := product (('+'|'-') product)*
    product := signed (('*'|'/') signed | power)*     -- a bare `power` is implicit `*`
    signed := ('+'|'-')* power
    power := atom (('^'|'**') signed)?
    atom := number | variable | constant | function '(' sum ')' | '(' sum ')'
    """

    def __init__(self, tokens: list[_Token], variables: list[str]) -> None:
        self.tokens, self.index, self.depth, self.variables = tokens, 0, 0, variables
        self.names: dict[str, sympy.Expr] = {**CONSTANTS, **{name: variable_symbol(name) for name in variables}}

    def parse(self) -> sympy.Expr:
        expr = self._sum()
        if (token := self._peek()) is not None:
            what = "Unmatched ')'" if token.text == ")" else f"Unexpected {token.text!r}"
            raise SymbolicError(f"{what} at position {token.position}.")
        return expr

    def _peek(self) -> _Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def _accept(self, *texts: str) -> _Token | None:
        token = self._peek()
        if token is None or token.kind != "op" or token.text not in texts:
            return None
        self.index += 1
        return token

    @contextmanager
    def _nested(self) -> Iterator[None]:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise SymbolicError(f"The expression is nested too deeply (at most {MAX_DEPTH} levels).")
        yield
        self.depth -= 1

    def _sum(self) -> sympy.Expr:
        expr = self._product()
        while (token := self._accept("+", "-")) is not None:
            right = self._product()
            expr = _checked_constants(expr + right if token.text == "+" else expr - right, token)
        return expr

    def _product(self) -> sympy.Expr:
        expr = self._signed()
        while True:
            if (token := self._accept("*", "/")) is not None:
                right = self._signed()
                expr = _checked_quotient(expr, right, token) if token.text == "/" else expr * right
            elif (token := self._implicit_factor()) is not None:
                expr = expr * self._power()
            else:
                return expr
            expr = _checked_constants(expr, token)

    def _implicit_factor(self) -> _Token | None:
        """The token starting an implied `*` factor (`2x`, `x y`, `2(x+1)`), if any."""
        token = self._peek()
        if token is None or (token.kind == "op" and token.text != "("):
            return None
        if token.kind == "number":
            raise SymbolicError(f"Write '*' before the number {token.text} at position {token.position}.")
        return token

    def _signed(self) -> sympy.Expr:
        negative = False
        while (token := self._accept("+", "-")) is not None:
            negative ^= token.text == "-"
        expr = self._power()
        return -expr if negative else expr

    def _power(self) -> sympy.Expr:
        base = self._atom()
        if (token := self._accept("^", "**")) is None:
            return base
        with self._nested():
            exponent = self._signed()
        return _checked_power(base, exponent, token)

    def _atom(self) -> sympy.Expr:
        token = self._peek()
        if token is None:
            raise SymbolicError("The expression ends too early: expected a number, a variable or '('.")
        self.index += 1
        if token.kind == "number":
            return _number_value(token)
        if token.kind == "name":
            return self._name(token)
        if token.text == "(":
            return self._parenthesized(token)
        raise SymbolicError(f"Unexpected {token.text!r} at position {token.position}: expected a value.")

    def _parenthesized(self, opening: _Token) -> sympy.Expr:
        with self._nested():
            expr = self._sum()
        if self._accept(")") is None:
            raise SymbolicError(f"Missing ')' for the '(' at position {opening.position}.")
        return expr

    def _name(self, token: _Token) -> sympy.Expr:
        name = token.text
        if name in self.names:
            return self.names[name]
        if name.lower() in FUNCTIONS:  # also Heaviside, Exp: spellings students meet elsewhere
            return self._call(token)
        if name.lower() in _NOT_NUMBERS:
            raise SymbolicError(f"{name!r} is not allowed: the answer must be a finite expression.")
        if all(char in self.variables for char in name):  # `xy^2` is x*y^2: split into one token per letter
            letters = [_Token("name", char, token.position + offset) for offset, char in enumerate(name)]
            self.tokens[self.index - 1 : self.index] = letters
            return self.names[name[0]]
        raise SymbolicError(f"Unknown name {name!r} at position {token.position}. {allowed_summary(self.variables)}")

    def _call(self, token: _Token) -> sympy.Expr:
        opening = self._accept("(")
        if opening is None:
            raise SymbolicError(
                f"Write {token.text}(...) with parentheses, e.g. {token.text}(x) (position {token.position})."
            )
        return _checked_constants(FUNCTIONS[token.text.lower()](self._parenthesized(opening)), token)
