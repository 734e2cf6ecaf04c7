"""Property tests for the answer parser; skipped where hypothesis is absent."""

from __future__ import annotations

import pytest

hypothesis = pytest.importorskip("hypothesis")
strategies = pytest.importorskip("hypothesis.strategies")

from chainrule.answers.number_parse import AnswerError, parse_numeric  # noqa: E402
from chainrule.values import format_value  # noqa: E402

given, st = hypothesis.given, strategies
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@given(finite)
def test_it_reads_back_any_finite_float_python_prints(number: float) -> None:
    assert parse_numeric(repr(number)) == number


@given(st.lists(finite, min_size=1, max_size=6))
def test_it_reads_back_any_list_of_floats(numbers: list[float]) -> None:
    assert parse_numeric(repr(numbers)) == numbers
    assert parse_numeric(", ".join(repr(n) for n in numbers)) == (numbers if len(numbers) > 1 else numbers[0])
    assert parse_numeric(f"tensor({numbers!r})") == numbers


@given(st.text(max_size=40))
def test_it_either_parses_or_raises_answer_error_on_any_text(text: str) -> None:
    try:
        value = parse_numeric(text)
    except AnswerError as error:
        assert str(error)
    else:
        printed = format_value(value)
        assert format_value(parse_numeric(printed)) == printed
