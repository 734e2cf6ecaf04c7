from __future__ import annotations

import random

import pytest

from chainrule import AnswerError, parse_numeric
from chainrule.answers.number_parse import MAX_ANSWER_CHARS
from chainrule.values import Value, format_value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("7", 7.0),
        ("7.0", 7.0),
        ("-8", -8.0),
        ("1/2", 0.5),
        ("-1/4", -0.25),
        ("1e-3", 0.001),
        ("2.5E+2", 250.0),
        (".5", 0.5),
        ("+3", 3.0),
        ("\u22123", -3.0),  # a typographic minus pasted from a document
        ("[2, 4, 6]", [2.0, 4.0, 6.0]),
        ("2, 4, 6", [2.0, 4.0, 6.0]),
        ("tensor([2., 4., 6.])", [2.0, 4.0, 6.0]),
        ("torch.tensor([7.])", [7.0]),
        ("tensor(7.)", 7.0),
        ("[[1, 2], [3, 4]]", [[1.0, 2.0], [3.0, 4.0]]),
        ("tensor([[1., 2.],\n        [3., 4.]])", [[1.0, 2.0], [3.0, 4.0]]),
        ("(1, 2)", [1.0, 2.0]),
        ("[1, 2,]", [1.0, 2.0]),
        ("[7]", [7.0]),
        ("None", None),
        ("  none  ", None),
    ],
)
def test_it_accepts_the_usual_ways_to_write_a_gradient(text: str, value: Value) -> None:
    assert parse_numeric(text) == value


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("nan", "finite"),
        ("NaN", "finite"),
        ("inf", "finite"),
        ("-inf", "finite"),
        ("1e999", "too large"),
        ("9" * 400, "too large"),
        ("[1, 2", "never closed"),
        ("1, 2]", "no matching opening"),
        ("tensor([1, 2)", "do not match"),
        ("tensor(7", "never closed"),
        ("seven", "words"),
        ("x.grad", "words"),
        ("__import__('os')", "unexpected character"),
        ("1/0", "division by zero"),
        ("[[1], [2, 3]]", "same length"),
        ("[]", "empty brackets"),
        ("[" * 20 + "1" + "]" * 20, "nested too deeply"),
        ("1 2", "unexpected"),
        ("--1", "unexpected"),
        ("[1,,2]", "unexpected"),
        ("1/", "ends too early"),
        ("7" * (MAX_ANSWER_CHARS + 1), "too long"),
    ],
)
def test_it_rejects_what_is_not_a_number_with_a_message_that_helps(text: str, says: str) -> None:
    with pytest.raises(AnswerError, match=says):
        parse_numeric(text)


def test_it_raises_a_value_error_subclass() -> None:
    assert issubclass(AnswerError, ValueError)


def _random_value(rng: random.Random, depth: int) -> Value:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice([0.0, 1.0, -2.5, 1e-3, 123456.0, rng.uniform(-1e6, 1e6)])
    width = rng.randint(1, 4)
    shape_of_row = _random_value(rng, depth - 1)
    return [shape_of_row for _ in range(width)]


def test_it_reads_back_every_value_it_prints() -> None:
    rng = random.Random(7)
    for _ in range(300):
        value = _random_value(rng, 3)
        parsed = parse_numeric(format_value(value))
        assert format_value(parsed) == format_value(value)
        assert parse_numeric(repr(value)) == value


def test_it_never_fails_with_anything_but_answer_error_on_random_text() -> None:
    rng = random.Random(11)
    alphabet = "0123456789.,-+/eE[]() tensorNaif\u2212"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        try:
            parse_numeric(text)
        except AnswerError:
            pass
