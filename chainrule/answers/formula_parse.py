"""Safe parsing of a student's symbolic answer (`y + 2x`, `x*(1 - tanh(x)^2)`)
into a `Formula`: a small tree of plain Python objects, never a SymPy expression.

This is all the web request does with a formula, so it must be cheap and bounded
whatever the text: a tokenizer and a recursive-descent parser accept only a
whitelist (numbers, the assignment's variables, `pi`, `e` and a few functions),
and every size is capped (length, nesting depth, node count, digits, exponents).
SymPy never runs here: building a SymPy expression already runs its assumption
system, which a 65-character formula can keep busy for minutes. Values at points
are computed from the tree in plain floats (`formula_value`); SymPy's equivalence
check runs in the sandbox under a CPU and memory limit (`chainrule.answers.formula_job`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction

from chainrule.answers.formula_tree import CONSTANTS, FUNCTIONS, Formula, formula_value, formula_variables

__all__ = ["CONSTANTS", "FUNCTIONS", "Formula", "SymbolicError", "allowed_summary", "formula_value",
           "formula_variables", "parse_expression"]

MAX_LENGTH = 500
MAX_DEPTH = 30
MAX_NUMBER_DIGITS = 30
MAX_EXPONENT = 100
MAX_CONSTANT_DIGITS = 100
MAX_NODES = 500


class SymbolicError(ValueError):
    """An answer that cannot be read; the message is written for the student."""


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


def _number_value(token: _Token) -> Formula:
    """Exact rational value, so `0.5*x` and `x/2` are the same expression."""
    mantissa, _, exponent = token.text.lower().partition("e")
    if sum(char.isdigit() for char in mantissa) > MAX_NUMBER_DIGITS:
        raise SymbolicError(f"Numbers may have at most {MAX_NUMBER_DIGITS} digits (position {token.position}).")
    if exponent and abs(int(exponent)) > MAX_EXPONENT:
        raise SymbolicError(f"Powers of ten are limited to e±{MAX_EXPONENT} (position {token.position}).")
    return Formula("number", value=Fraction(token.text))


def _digits(number: Fraction) -> float:
    return max(abs(number.numerator).bit_length(), number.denominator.bit_length()) * 0.30103


def parse_expression(text: str, *, variables: list[str]) -> Formula:
    """Read a student's formula in `variables`; raises SymbolicError with a readable message.
    Bounded work for any text: at most MAX_LENGTH characters and MAX_NODES nodes."""
    for name in variables:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name in FUNCTIONS:
            raise ValueError(f"not a usable variable name: {name!r}")
    if len(text) > MAX_LENGTH:
        raise SymbolicError(f"The expression is too long ({len(text)} characters; at most {MAX_LENGTH}).")
    tokens = _tokenize(text.translate(_UNICODE))
    if not tokens:
        raise SymbolicError("The answer is empty. Type an expression such as y + 2*x.")
    return _Parser(tokens, variables).parse()


class _Parser:
    """Grammar (`^` binds tighter than unary minus, as in `-x^2 = -(x^2)`):
    sum := product (('+'|'-') product)*
    product := signed (('*'|'/') signed | power)*     -- a bare `power` is implicit `*`
    signed := ('+'|'-')* power
    power := atom (('^'|'**') signed)?
    atom := number | variable | constant | function '(' sum ')' | '(' sum ')'
    """

    def __init__(self, tokens: list[_Token], variables: list[str]) -> None:
        self.tokens, self.index, self.depth, self.variables, self.nodes = tokens, 0, 0, variables, 0

    def parse(self) -> Formula:
        expr = self._sum()
        if (token := self._peek()) is not None:
            what = "Unmatched ')'" if token.text == ")" else f"Unexpected {token.text!r}"
            raise SymbolicError(f"{what} at position {token.position}.")
        return expr

    def _node(self, op: str, *args: Formula, token: _Token, value: Fraction | str | None = None) -> Formula:
        """Every node is counted, and a node without variables must have a finite real value."""
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise SymbolicError(f"The expression is too large (more than {MAX_NODES} parts).")
        node = Formula(op, args, value)
        if not (args and node.constant):
            return node
        number = formula_value(node, {})
        if number is None:
            raise SymbolicError(
                f"The part at position {token.position} has no finite real value: it is undefined "
                "(like log(0)), not real (like sqrt(-1)) or too large (beyond about 1e308)."
            )
        if op in ("add", "mul", "pow") and abs(number) > 10.0**MAX_CONSTANT_DIGITS:
            raise SymbolicError(f"That number is too large (position {token.position}).")
        return node

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

    def _sum(self) -> Formula:
        first = self._product()
        terms, last = [first], None
        while (token := self._accept("+", "-")) is not None:
            term = self._product()
            terms.append(term if token.text == "+" else self._node("neg", term, token=token))
            last = token
        return terms[0] if last is None else self._node("add", *terms, token=last)

    def _product(self) -> Formula:
        factors, last = [self._signed()], None
        while True:
            if (token := self._accept("*", "/")) is not None:
                factor = self._signed()
                if token.text == "/":
                    if factor.constant and formula_value(factor, {}) == 0:
                        raise SymbolicError(f"Division by zero (the '/' at position {token.position}).")
                    factor = self._node("recip", factor, token=token)
            elif (token := self._implicit_factor()) is not None:
                factor = self._power()
            else:
                return factors[0] if last is None else self._node("mul", *factors, token=last)
            factors.append(factor)
            last = token

    def _implicit_factor(self) -> _Token | None:
        """The token starting an implied `*` factor (`2x`, `x y`, `2(x+1)`), if any."""
        token = self._peek()
        if token is None or (token.kind == "op" and token.text != "("):
            return None
        if token.kind == "number":
            raise SymbolicError(f"Write '*' before the number {token.text} at position {token.position}.")
        return token

    def _signed(self) -> Formula:
        negative, first = False, None
        while (token := self._accept("+", "-")) is not None:
            negative ^= token.text == "-"
            first = first or token
        expr = self._power()
        return self._node("neg", expr, token=first) if negative and first is not None else expr

    def _power(self) -> Formula:
        base = self._atom()
        if (token := self._accept("^", "**")) is None:
            return base
        with self._nested():
            exponent = self._signed()
        if exponent.constant:
            size = formula_value(exponent, {})  # floats: the exponent may be exp(exp(exp(exp(10))))
            if size is None or abs(size) > MAX_EXPONENT:
                raise SymbolicError(f"Exponents are limited to ±{MAX_EXPONENT} (the '^' at position {token.position}).")
            if base.constant and formula_value(base, {}) == 0 and size < 0:
                raise SymbolicError(f"Division by zero: 0 to a negative power (position {token.position}).")
            number = base.value if base.op == "number" else None
            if isinstance(number, Fraction) and _digits(number) * abs(size) > MAX_CONSTANT_DIGITS:
                raise SymbolicError(f"That number is too large (the '^' at position {token.position}).")
            inner = base.args[1] if base.op == "pow" and not base.constant and base.args[1].constant else None
            if inner is not None and abs((formula_value(inner, {}) or 0.0) * size) > MAX_EXPONENT:
                raise SymbolicError(f"Exponents are limited to ±{MAX_EXPONENT}, also after combining powers "
                                    f"like (x^50)^3 (the '^' at position {token.position}).")
        return self._node("pow", base, exponent, token=token)

    def _atom(self) -> Formula:
        token = self._peek()
        if token is None:
            raise SymbolicError("The expression ends too early: expected a number, a variable or '('.")
        self.index += 1
        if token.kind == "number":
            self.nodes += 1
            return _number_value(token)
        if token.kind == "name":
            return self._name(token)
        if token.text == "(":
            return self._parenthesized(token)
        raise SymbolicError(f"Unexpected {token.text!r} at position {token.position}: expected a value.")

    def _parenthesized(self, opening: _Token) -> Formula:
        with self._nested():
            expr = self._sum()
        if self._accept(")") is None:
            raise SymbolicError(f"Missing ')' for the '(' at position {opening.position}.")
        return expr

    def _name(self, token: _Token) -> Formula:
        name = token.text
        if name in CONSTANTS and name not in self.variables:
            return self._node("constant", token=token, value=name)
        if name in self.variables:
            return self._node("variable", token=token, value=name)
        if name.lower() in FUNCTIONS:  # also Heaviside, Exp: spellings students meet elsewhere
            return self._call(token)
        if name.lower() in _NOT_NUMBERS:
            raise SymbolicError(f"{name!r} is not allowed: the answer must be a finite expression.")
        if all(char in self.variables for char in name):  # `xy^2` is x*y^2: split into one token per letter
            letters = [_Token("name", char, token.position + offset) for offset, char in enumerate(name)]
            self.tokens[self.index - 1 : self.index] = letters
            return self._node("variable", token=token, value=name[0])
        raise SymbolicError(f"Unknown name {name!r} at position {token.position}. {allowed_summary(self.variables)}")

    def _call(self, token: _Token) -> Formula:
        opening = self._accept("(")
        if opening is None:
            raise SymbolicError(
                f"Write {token.text}(...) with parentheses, e.g. {token.text}(x) (position {token.position})."
            )
        return self._node(token.text.lower(), self._parenthesized(opening), token=token)
