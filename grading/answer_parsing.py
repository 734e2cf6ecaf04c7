"""Validation of a submission's answers and code, in the web process: bounded cost, no reference run.

An answer that cannot be graded is refused here (AnswerErrors: nothing stored, no attempt used).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assignments.models import Assignment, Part
from chainrule import AnswerError, parse_numeric
from chainrule.answers.formula_parse import SymbolicError, parse_expression
from chainrule.code_limits import MAX_CODE_CHARS
from grading.choice_parts import choice_parse
from grading.code_syntax import code_syntax_problem

MAX_PARTS = 50


class AnswerErrors(ValueError):
    """Unreadable answers, keyed by part. Nothing is stored and no attempt is used."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{key}: {message}" for key, message in errors.items()))
        self.errors = errors


def answers_parse(*, assignment: Assignment, answers: Mapping[str, Any], code: Mapping[str, Any]) -> None:
    """Raises AnswerErrors unless every answer and every piece of code can be graded."""
    parts = {part.key: part for part in assignment.parts.all()}
    if not answers and not code:
        raise AnswerErrors({"answers": f"Give at least one answer, e.g. {next(iter(parts), 'x.grad')}=7."})
    if len(answers) + len(code) > MAX_PARTS:
        raise AnswerErrors({"answers": f"At most {MAX_PARTS} answers per submission."})
    errors: dict[str, str] = {}
    for key, text in [*answers.items(), *code.items()]:
        try:
            _check_one(parts, key, text, as_code=key in code)
        except AnswerError as exc:
            errors[str(key)[:64]] = str(exc)
    if errors:
        raise AnswerErrors(errors)


def _check_one(parts: dict[str, Part], key: str, text: Any, *, as_code: bool) -> None:
    part = parts.get(key)
    if part is None:
        raise AnswerError(f"This assignment has no part {str(key)[:64]!r}; its parts are {', '.join(parts)}.")
    if not isinstance(text, str):
        raise AnswerError("The answer must be text, e.g. \"7\" or \"[2, 4, 6]\".")
    if (part.kind == Part.Kind.CODE) != as_code:
        where = "as code" if part.kind == Part.Kind.CODE else "as an answer, not as code"
        raise AnswerError(f"Part {key} is a {part.kind} part: submit it {where}.")
    if part.kind == Part.Kind.NUMERIC:
        parse_numeric(text)
    elif part.kind == Part.Kind.CHOICE:
        choice_parse(text, config=part.choice)
    elif part.kind == Part.Kind.SYMBOLIC:
        _check_formula(part, text)
    else:
        _check_code(text)


def _check_formula(part: Part, text: str) -> None:
    try:
        parse_expression(text, variables=list(part.symbolic.variables))
    except SymbolicError as exc:
        raise AnswerError(str(exc)) from None


def _check_code(source: str) -> None:
    if not source.strip():
        raise AnswerError("The code is empty.")
    if len(source) > MAX_CODE_CHARS:
        raise AnswerError(f"The code is longer than {MAX_CODE_CHARS} characters.")
    problem = code_syntax_problem(source)  # bounded cost: this runs in the web process
    if problem:
        raise AnswerError(problem)
