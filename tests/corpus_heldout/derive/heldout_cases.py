"""The held-out corpus's derive helper: tests/corpus/derive/corpus_cases.py (number formats,
the checks against the right answer, forward values and the part's other mistakes) writing to
tests/corpus_heldout/cases, plus the chain-rule paths of a graph spelled as the result document
spells them (leaf name, op names, output name), so a missing or sign-flipped path is named from
the graph torch built, not typed by hand.

    .venv/bin/python tests/corpus_heldout/derive/<name>.py
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "corpus" / "derive"))

import corpus_cases
from corpus_cases import answer, as_tensor, at, bare, close, node_names  # noqa: F401

from chainrule.op_names import op_name  # the spelling of node names, nothing else

HELDOUT_CASES = Path(__file__).resolve().parent.parent / "cases"


def rounded(value: Any, digits: int = 6) -> str:
    """As a student copies a printout: `digits` significant digits, nested brackets kept."""
    value = corpus_cases.plain(value)
    if isinstance(value, list):
        return "[" + ", ".join(rounded(v, digits) for v in value) + "]"
    return corpus_cases.number(float(f"{value:.{digits}g}"))


def typed(text: str) -> Any:
    """The number a right answer's text stands for (lists, `tensor(…)`, fractions, `a, b`; `;`
    is not a format), read by the corpus author's own small reader, so a typo in a right
    answer fails here and not as an engine miss."""
    body = text.strip()
    if body.startswith("tensor(") and body.endswith(")"):
        body = body[len("tensor("):-1]
    if body == "None":
        return None
    tree = ast.parse(body if body.startswith("[") or "," not in body else f"[{body}]", mode="eval")

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.List):
            return [value(n) for n in node.elts]
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return value(node.left) / value(node.right)
        raise ValueError(f"not a number format: {text!r}")

    return value(tree.body)


class Cases(corpus_cases.Cases):
    def __init__(self, slug: str) -> None:
        super().__init__(slug, folder=HELDOUT_CASES)

    def correct(self, part: str, value: Any, *texts: str) -> None:
        for text in texts:
            if not close(typed(text), None if value is None else corpus_cases.plain(value), rel=1e-5):
                raise SystemExit(f"{self.slug} {part}: the right answer {text!r} is not {answer(value)}")
        super().correct(part, value, *texts)

    def correct_formula(self, part: str, value: Any, point: dict[str, float], *formulas: str) -> None:
        """Right formulas, each checked at the seed point against the reference's number."""
        for formula in formulas:
            if not close(at(formula, **point), corpus_cases.plain(value), rel=1e-6):
                raise SystemExit(f"{self.slug} {part}: the right formula {formula!r} is not {answer(value)}")
        super().correct(part, value, *formulas)


Path_ = list[str]


def graph_paths(output: torch.Tensor, leaves: dict[str, torch.Tensor], name: str) -> list[tuple[Path_, list[Any]]]:
    """Every path from a named leaf to `output`: (its names, its autograd nodes leaf first)."""
    by_id = {id(t): n for n, t in leaves.items()}
    found: list[tuple[Path_, list[Any]]] = []

    def walk(fn: Any, above: list[Any]) -> None:
        if fn is None:
            return
        variable = getattr(fn, "variable", None)
        if variable is not None:
            if id(variable) in by_id:
                nodes = above[::-1]
                found.append(([by_id[id(variable)], *(op_name(type(n).__name__) for n in nodes), name], nodes))
            return
        for child, _ in fn.next_functions:
            walk(child, [*above, fn])

    walk(output.grad_fn, [])
    return found


def paths_from(output: torch.Tensor, leaves: dict[str, torch.Tensor], name: str, leaf: str,
               through: list[torch.Tensor] | None = None, avoiding: list[torch.Tensor] | None = None) -> list[Path_]:
    """The paths from `leaf` that pass through every tensor of `through` and none of `avoiding`."""
    want = [t.grad_fn for t in through or []]
    shun = [t.grad_fn for t in avoiding or []]
    result = []
    for names, nodes in graph_paths(output, leaves, name):
        if names[0] != leaf:
            continue
        if all(any(n is w for n in nodes) for w in want) and not any(any(n is s for n in nodes) for s in shun):
            result.append(names)
    return result


class _Belief(torch.autograd.Function):
    """An op whose forward is right and whose backward is what the student believes."""

    @staticmethod
    def forward(ctx: Any, forward: Any, backward: Any, *inputs: torch.Tensor) -> torch.Tensor:
        ctx.belief = backward
        ctx.inputs = [t.detach() for t in inputs]  # kept off autograd's saved tensors
        return forward(*inputs)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        return (None, None, *ctx.belief(grad, *ctx.inputs))


def believed(forward: Any, backward: Any) -> Any:
    """`believed(torch.cumsum…, lambda g, x: (g.cumsum(0),))(x)`: the op with the student's
    vector-Jacobian product, so torch carries the one wrong local derivative through the rest
    of the chain rule exactly as the student would by hand."""
    return lambda *inputs: _Belief.apply(forward, backward, *inputs)


class student_run:  # used as `with student_run():`
    """A block that builds the student's wrong graph: what torch saves for its backward pass is
    not a forward value of the reference graph, so it is dropped from the helper's check."""

    def __enter__(self) -> None:
        self.mark = len(corpus_cases.SAVED)

    def __exit__(self, *exc: object) -> None:
        del corpus_cases.SAVED[self.mark:]
