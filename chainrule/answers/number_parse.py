"""Numeric answers as students type them: 7, 7.0, -8, 1/2, 1e-3, [2, 4, 6],
2, 4, 6, tensor([2., 4., 6.]), nested lists, None. A small tokenizer and a
recursive-descent parser, never eval; every rejection says what to type."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from chainrule.values import RaggedValue, Value, shape_of

MAX_ANSWER_CHARS = 2000
MAX_DEPTH = 6
EXAMPLES = "a number such as 7, -8, 1/2 or 1e-3, a list such as [2, 4, 6], or None"


class AnswerError(ValueError):
    """The text is not a numeric answer; str(error) tells the student why."""


@dataclass(frozen=True)
class Token:
    kind: str  # "number", "word", or the punctuation character itself
    text: str
    position: int


_TOKEN = re.compile(
    r"\s*(?:(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_.]*)|(?P<punct>[\[\](),/+\-]))"
)
_MINUS_SIGNS = str.maketrans({"\u2212": "-", "\u2013": "-"})  # pasted typographic minus


def tokenize(text: str) -> list[Token]:
    tokens = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise AnswerError(f"unexpected character {text[position:].lstrip()[:1]!r}; type {EXAMPLES}")
        kind = match.lastgroup or "punct"
        token_text = match.group(kind)
        tokens.append(Token(token_text if kind == "punct" else kind, token_text, match.start(kind)))
        position = match.end()
    return tokens


def parse_numeric(text: str) -> Value:
    if not isinstance(text, str):
        raise AnswerError(f"the answer must be text; type {EXAMPLES}")
    if len(text) > MAX_ANSWER_CHARS:
        raise AnswerError(f"the answer is too long (more than {MAX_ANSWER_CHARS} characters)")
    tokens = tokenize(text.translate(_MINUS_SIGNS))
    if not tokens:
        raise AnswerError(f"the answer is empty; type {EXAMPLES}")
    value = _Parser(tokens).answer()
    try:
        shape_of(value)
    except RaggedValue:
        raise AnswerError("the rows of a matrix must all have the same length") from None
    return value


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.index = 0

    def peek(self) -> Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self, kind: str) -> Token:
        token = self.peek()
        if token is None or token.kind != kind:
            raise AnswerError(_expected(kind, token))
        self.index += 1
        return token

    def answer(self) -> Value:
        first = self.peek()
        if first is not None and first.kind == "word" and first.text in ("None", "none"):
            self.index += 1
            value: Value = None
        elif first is not None and first.kind == "word" and first.text in ("tensor", "torch.tensor"):
            self.index += 1
            opening = self.take("(")
            value = self.sequence(depth=1, closing=")")
            self.close(opening, ")")
        else:
            value = self.sequence(depth=0, closing=None)
        leftover = self.peek()
        if leftover is not None:
            raise AnswerError(_unexpected(leftover))
        return value

    def sequence(self, *, depth: int, closing: str | None) -> Value:
        """Bare comma-separated items: more than one (or a trailing comma) is a list."""
        items, trailing_comma = self.items(depth=depth, closing=closing)
        return items if len(items) > 1 or trailing_comma else items[0]

    def items(self, *, depth: int, closing: str | None) -> tuple[list[Value], bool]:
        items = [self.item(depth)]
        while (token := self.peek()) is not None and token.kind == ",":
            self.index += 1
            following = self.peek()
            if following is None or following.kind == closing:
                return items, True
            items.append(self.item(depth))
        return items, False

    def item(self, depth: int) -> Value:
        token = self.peek()
        if token is not None and token.kind in ("[", "("):
            return self.bracketed(depth + 1)
        return self.fraction()

    def bracketed(self, depth: int) -> Value:
        if depth > MAX_DEPTH:
            raise AnswerError(f"the answer is nested too deeply (at most {MAX_DEPTH} levels of brackets)")
        opening = self.take(self.peek().kind)  # type: ignore[union-attr]
        closing = "]" if opening.kind == "[" else ")"
        if (token := self.peek()) is not None and token.kind == closing:
            raise AnswerError("empty brackets are not a value; put the numbers inside, e.g. [2, 4, 6]")
        items, _ = self.items(depth=depth, closing=closing)
        self.close(opening, closing)
        return list(items)

    def close(self, opening: Token, closing: str) -> None:
        token = self.peek()
        if token is None:
            raise AnswerError(f"a {opening.text!r} is never closed; add {closing!r}")
        if token.kind in ("]", ")") and token.kind != closing:
            raise AnswerError(f"brackets do not match: {opening.text!r} is closed by {token.text!r}")
        self.take(closing)

    def fraction(self) -> float:
        numerator = self.signed_number()
        if (token := self.peek()) is None or token.kind != "/":
            return numerator
        self.index += 1
        denominator = self.signed_number()
        if denominator == 0:
            raise AnswerError("division by zero; type the value as a number")
        return _finite(numerator / denominator)

    def signed_number(self) -> float:
        sign = 1.0
        if (token := self.peek()) is not None and token.kind in ("+", "-"):
            sign = -1.0 if token.kind == "-" else 1.0
            self.index += 1
        return sign * _finite(float(self.take("number").text))


def _finite(number: float) -> float:
    if not math.isfinite(number):
        raise AnswerError("the number is too large to be a gradient value; type a finite number")
    return number


def _expected(kind: str, token: Token | None) -> str:
    if token is None:
        return f"the answer ends too early; type {EXAMPLES}" if kind == "number" else f"{kind!r} is missing at the end"
    return _unexpected(token)


def _unexpected(token: Token) -> str:
    if token.kind == "word":
        lowered = token.text.lower()
        if lowered in ("nan", "inf", "infinity", "math.inf", "float"):
            return f"{token.text!r} is not a usable gradient value; type a finite number"
        return f"words such as {token.text!r} are not understood; type {EXAMPLES}"
    if token.kind in ("]", ")"):
        return f"the {token.text!r} has no matching opening bracket"
    return f"unexpected {token.text!r} at position {token.position + 1}; type {EXAMPLES}"
