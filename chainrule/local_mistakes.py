"""A catalogue of typical wrong local derivatives, one entry per node class.

Each mistake replaces the factor one edge contributes to the chain rule
(d out / d input) by what students typically write instead, e.g. the power
rule as n·x instead of n·x^(n-1). Only elementwise operations are catalogued,
so the wrong vector-Jacobian product is simply grad × wrong factor."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from chainrule.op_names import op_name
from chainrule.path_contributions import VectorJacobian, node_vjp
from chainrule.values import format_number

InputValue = Callable[[int], torch.Tensor | None]
Candidate = tuple[str, torch.Tensor]  # (formula a student writes, its value)
# A rule returns the right formula, its value, and the typical wrong ones.
RuleResult = tuple[str, torch.Tensor, list[Candidate]]


@dataclass(frozen=True)
class LocalMistake:
    node: Any
    slot: int
    op: str
    used: str
    right: str
    used_factor: torch.Tensor
    right_factor: torch.Tensor

    def vjp(self) -> VectorJacobian:
        def mistaken(node: Any, grads: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
            result = node_vjp(node, grads)
            if node is not self.node or result[self.slot] is None:
                return result
            right = result[self.slot]
            assert right is not None
            wrong = (grads[0] * self.used_factor).sum_to_size(right.shape)
            return (*result[: self.slot], wrong, *result[self.slot + 1 :])

        return mistaken


def _power(label: str, exponent: float) -> str:
    if exponent == 1:
        return label
    if exponent == 0:
        return "1"
    return f"{label}^{format_number(exponent)}"


def _times(coefficient: float, expression: str) -> str:
    if coefficient == 1:
        return expression
    return f"{format_number(coefficient)}·{expression}"


def _pow(node: Any, slot: int, labels: list[str], value_of: InputValue) -> RuleResult:
    n = float(node._saved_exponent)
    x = node._saved_self
    label = labels[slot]
    right = (_times(n, _power(label, n - 1)), n * x ** (n - 1))
    return right[0], right[1], [
        (_times(n, label), n * x),
        (_power(label, n - 1), x ** (n - 1)),
        (_times(n, _power(label, n)), n * x**n),
    ]


def _mul(node: Any, slot: int, labels: list[str], value_of: InputValue) -> RuleResult:
    saved = [node._saved_self, node._saved_other]
    own = saved[slot] if saved[slot] is not None else value_of(slot)
    other = saved[1 - slot]
    if own is None or other is None:
        return "", torch.zeros(()), []
    return labels[1 - slot], other, [(labels[slot], own)]


def _sin(node: Any, slot: int, labels: list[str], value_of: InputValue) -> RuleResult:
    x, label = node._saved_self, labels[slot]
    return f"cos({label})", torch.cos(x), [(f"-cos({label})", -torch.cos(x))]


def _cos(node: Any, slot: int, labels: list[str], value_of: InputValue) -> RuleResult:
    x, label = node._saved_self, labels[slot]
    return f"-sin({label})", -torch.sin(x), [(f"sin({label})", torch.sin(x))]


def _tanh(node: Any, slot: int, labels: list[str], value_of: InputValue) -> RuleResult:
    t, label = node._saved_result, labels[slot]
    return f"1 - tanh²({label})", 1 - t**2, [(f"1 - tanh({label})", 1 - t)]


def _sigmoid(node: Any, slot: int, labels: list[str], value_of: InputValue) -> RuleResult:
    s, label = node._saved_result, labels[slot]
    return f"σ({label})·(1 - σ({label}))", s * (1 - s), [(f"σ({label})", s)]


def _exp(node: Any, slot: int, labels: list[str], value_of: InputValue) -> RuleResult:
    e, label = node._saved_result, labels[slot]
    x = torch.log(e)
    # The power rule applied to e^x is the classic slip.
    return f"e^{label}", e, [(f"{label}·e^({label}-1)", x * torch.exp(x - 1))]


_CATALOGUE: dict[str, Callable[[Any, int, list[str], InputValue], RuleResult]] = {
    "PowBackward0": _pow,
    "MulBackward0": _mul,
    "SinBackward0": _sin,
    "CosBackward0": _cos,
    "TanhBackward0": _tanh,
    "SigmoidBackward0": _sigmoid,
    "ExpBackward0": _exp,
}


def local_mistakes(node: Any, labels: list[str], value_of: InputValue) -> list[LocalMistake]:
    """Wrong local derivatives for every differentiable input of `node`."""
    rule = _CATALOGUE.get(type(node).__name__)
    if rule is None:
        return []
    mistakes = []
    for slot, (child, _) in enumerate(node.next_functions):
        if child is None:
            continue
        right_text, right, candidates = rule(node, slot, labels, value_of)
        for used_text, used in candidates:
            if not (torch.isfinite(used).all() and torch.isfinite(right).all()):
                continue  # x^(n-1) at x = 0 with n < 1: no answer a student could type
            if used.shape == right.shape and torch.allclose(used.double(), right.double()):
                continue  # e.g. n·x equals n·x^(n-1) when n = 2
            mistakes.append(
                LocalMistake(node, slot, op_name(type(node).__name__), used_text, right_text, used, right)
            )
    return mistakes
