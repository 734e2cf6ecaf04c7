"""One wrong local derivative: what a student uses for one node's
vector-Jacobian product, and the rule they broke."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

InputGrads = tuple[torch.Tensor | None, ...]


@dataclass(frozen=True)
class NodeContext:
    """What a rule may read about one node in the reference backward pass."""

    node: Any
    grads: list[torch.Tensor]  # gradient arriving per output slot
    right: InputGrads  # what the node really passes to each input
    labels: list[str]  # the student's name for each input (x, W, 2·x, u)
    value_of: Callable[[int], torch.Tensor | None]  # forward value of input `slot`
    labels_of: Callable[[Any], list[str]] | None = None  # the student's names for another node's inputs
    value_at: Callable[[Any, int], torch.Tensor | None] | None = None  # forward value of any node's output

    @property
    def grad(self) -> torch.Tensor:
        return self.grads[0]

    def replaced(self, slot: int, wrong: torch.Tensor) -> InputGrads:
        right = self.right[slot]
        if right is not None and wrong.shape != right.shape:
            if wrong.numel() != right.numel():
                raise ValueError("a wrong gradient must keep the input's shape")
            wrong = wrong.reshape(right.shape)
        return (*self.right[:slot], wrong, *self.right[slot + 1:])


@dataclass(frozen=True)
class Mutation:
    slots: tuple[int, ...]  # the inputs whose edge is wrong (one, or both for x*x)
    rule: str  # short id, e.g. "mean_normaliser" or "generic_one"
    used: str  # the local derivative the student used, in their terms
    right: str  # the right one
    lesson: str  # the rule to learn, one sentence
    wrong: InputGrads  # what the node passes to its inputs under this mistake
    generic: bool = False  # a mutation any op gets (factor 1, sign, ×2, ÷2, transposed)
    structural: bool = False  # a reduction, broadcast, matrix product, softmax or loss mistake
    used_value: torch.Tensor | None = None  # elementwise factors, for the words
    right_value: torch.Tensor | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RightDerivative:
    """The right local derivative of one edge, where it can be stated as a factor."""

    slot: int
    formula: str
    value: torch.Tensor
    passes: tuple[str, ...] = ()  # catalogued wrong formulas with the right value here: a slip no answer shows
