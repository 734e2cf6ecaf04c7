"""A syntax check of student code (and of the reference program) whose cost is bounded, for the web process.

`compile()` alone is not: 19,000 unary minuses or a 9,900-step attribute chain raise
RecursionError or MemoryError inside CPython's parser, and 2,900 nested lambdas take
1.5 s. So the source is first tokenized (linear time) and refused when one statement is
longer, more deeply bracketed, or nests more lambdas than any real answer does; only
then is it compiled, which for inputs within these bounds takes milliseconds.
"""

from __future__ import annotations

import io
import tokenize

MAX_STATEMENT_TOKENS = 1_000
MAX_BRACKET_DEPTH = 50
MAX_PREFIX_RUN = 50  # consecutive unary operators / `not` / `await`
MAX_STATEMENT_LAMBDAS = 10

_OPEN, _CLOSE = set("([{"), set(")]}")
_PREFIX_OPERATORS = {"-", "+", "~", "*", "**"}
_PREFIX_KEYWORDS = {"not", "await", "lambda"}


class CodeTooComplex(ValueError):
    """The code is syntactically beyond what the checker accepts (a message for the student)."""


def code_syntax_problem(source: str) -> str | None:
    """A message naming the syntax error or the exceeded bound; None when the code compiles."""
    problem = code_shape_problem(source)
    if problem is not None:
        return problem
    try:
        compile(source, "<student>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return f"Syntax error on line {exc.lineno}: {exc.msg}."
    except ValueError:
        return "The code contains a NUL character."
    except (RecursionError, MemoryError):  # not reached within the bounds; never a 500 if it is
        return "The code is too deeply nested to check."
    return None


def code_shape_problem(source: str, *, max_statement_tokens: int = MAX_STATEMENT_TOKENS) -> str | None:
    """The bound the code exceeds, or None: after it, compile() takes milliseconds and at worst raises
    RecursionError or MemoryError (a long flat chain), which the caller turns into a message. The
    reference program (instructor text, of bounded size) is checked without a per-statement limit."""
    try:
        _check_shape(source, max_statement_tokens)
    except CodeTooComplex as exc:
        return str(exc)
    except (tokenize.TokenError, SyntaxError):
        pass  # compile() names the error precisely (unclosed bracket, bad indentation…)
    return None


def _check_shape(source: str, max_statement_tokens: int) -> None:
    statement_tokens = depth = prefix_run = lambdas = 0
    previous_is_operand = False
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            statement_tokens = lambdas = prefix_run = 0
            previous_is_operand = False
            continue
        if token.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            continue
        statement_tokens += 1
        line = token.start[0]
        if statement_tokens > max_statement_tokens:
            raise CodeTooComplex(f"The statement around line {line} is too long to check "
                                 f"(more than {max_statement_tokens} tokens): split it into several.")
        text = token.string
        if text in _OPEN:
            depth += 1
            if depth > MAX_BRACKET_DEPTH:
                raise CodeTooComplex(f"Line {line} nests brackets more than {MAX_BRACKET_DEPTH} deep.")
        elif text in _CLOSE:
            depth = max(depth - 1, 0)
        if text == "lambda":
            lambdas += 1
            if lambdas > MAX_STATEMENT_LAMBDAS:
                raise CodeTooComplex(f"Line {line} has more than {MAX_STATEMENT_LAMBDAS} lambdas in one statement.")
        is_prefix = (token.type == tokenize.OP and text in _PREFIX_OPERATORS and not previous_is_operand) or (
            token.type == tokenize.NAME and text in _PREFIX_KEYWORDS)
        prefix_run = prefix_run + 1 if is_prefix else 0
        if prefix_run > MAX_PREFIX_RUN:
            raise CodeTooComplex(f"Line {line} chains more than {MAX_PREFIX_RUN} unary operators.")
        previous_is_operand = token.type in (tokenize.NAME, tokenize.NUMBER, tokenize.STRING) and not (
            text in _PREFIX_KEYWORDS or text in {"and", "or", "in", "is", "if", "else", "return", "yield"}
        ) or text in _CLOSE
