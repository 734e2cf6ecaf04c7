"""What each operation computes, in the student's symbols: `x·y`, `x³`, `4·x`,
`a + b`, `tanh(h)`. Constants and exponents come from what autograd saved
on the node (the 3 of x**3, the 4 of 4*x), so the picture shows them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from chainrule.node_catalog import NodeCatalog, is_leaf_node, walk_nodes
from chainrule.op_names import op_name
from chainrule.values import format_number

MAX_INLINE = 18  # an unnamed input longer than this is called by its op name
_SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_PREFIX = {"neg": "−{0}", "t": "{0}ᵀ", "transpose": "{0}ᵀ", "sum": "Σ {0}", "exp": "e^{0}"}
_INFIX = {"add": " + ", "sub": " − ", "mul": "·", "div": " / ", "mm": " @ ", "matmul": " @ ", "bmm": " @ "}


def power(base: str, exponent: float) -> str:
    """x², x⁻¹, x^0.5: integers as superscripts, other exponents spelled out."""
    if exponent == int(exponent) and abs(exponent) < 100:
        return f"{_grouped(base)}{format_number(exponent).translate(_SUPERSCRIPTS)}"
    return f"{_grouped(base)}^{format_number(exponent)}"


def _grouped(label: str) -> str:
    return label if label.isidentifier() or _is_number(label) else f"({label})"


def _is_number(label: str) -> bool:
    try:
        return math.isfinite(float(label))
    except ValueError:
        return False


def _constant(saved: Any, catalog: NodeCatalog) -> str:
    if isinstance(saved, torch.Tensor):
        name = catalog.tensor_name(saved)
        if name:
            return name
        if saved.numel() == 1:
            return format_number(float(saved))
    return "c"


class _Formulas:
    def __init__(self, catalog: NodeCatalog) -> None:
        self.catalog = catalog
        self.found: dict[str, str] = {}

    def symbol(self, node: Any) -> str:
        """How an input reads inside its consumer's formula."""
        if is_leaf_node(node):
            return self.catalog.node_name(node)
        name = self.catalog.output_tensor_name(node)
        if name:
            return name
        formula = self.formula(node)
        return formula if len(formula) <= MAX_INLINE else op_name(type(node).__name__)

    def formula(self, node: Any) -> str:
        node_id = self.catalog.node_id(node)
        if node_id not in self.found:
            self.found[node_id] = self._describe(node)
        return self.found[node_id]

    def _inputs(self, node: Any) -> list[str]:
        saved = [getattr(node, "_saved_self", None), getattr(node, "_saved_other", None)]
        labels = []
        for slot, (child, _) in enumerate(getattr(node, "next_functions", ())):
            if child is not None:
                labels.append(self.symbol(child))
            else:
                labels.append(_constant(saved[slot] if slot < 2 else None, self.catalog))
        if type(node).__name__ in _OFFSET_SIGN and labels.count("c") == 1 and len(labels) == 2:
            offset = self._offset(node, labels.index("c"))
            labels = [offset if label == "c" else label for label in labels]
        return labels

    def _offset(self, node: Any, slot: int) -> str:
        """The python number of x + 3 is not saved on the node: it is what the output adds to the input."""
        op, child = self.catalog.op_for(node), node.next_functions[1 - slot][0]
        given = self.catalog.forward_value(child)
        if op is None or given is None:
            return "c"
        try:
            difference = (op.value - given).double() * _OFFSET_SIGN[type(node).__name__][slot]
        except RuntimeError:
            return "c"
        if difference.numel() == 0 or not torch.allclose(difference, difference.reshape(-1)[0]):
            return "c"
        return format_number(float(f"{float(difference.reshape(-1)[0]):.6g}"))

    def _describe(self, node: Any) -> str:
        name = op_name(type(node).__name__)
        inputs = self._inputs(node)
        special = _SPECIAL.get(type(node).__name__)
        if special is not None:
            return special(node, inputs)
        if name == "mul" and len(inputs) == 2 and _is_number(inputs[1]):
            inputs = inputs[::-1]  # 4·x, as the course writes a scaled input
        if name in _INFIX and len(inputs) == 2:
            return _INFIX[name].join(_grouped(label) if name != "add" else label for label in inputs)
        if name in _PREFIX and len(inputs) == 1:
            return _PREFIX[name].format(_grouped(inputs[0]))
        return f"{name}({', '.join(inputs)})"


# out = a + b (or a − b): the constant operand is ±(out − the other operand), by its slot.
_OFFSET_SIGN = {"AddBackward0": (1.0, 1.0), "SubBackward0": (1.0, -1.0)}


def _pow_scalar(node: Any, inputs: list[str]) -> str:
    return power(inputs[0], float(node._saved_exponent))


def _pow_tensor(node: Any, inputs: list[str]) -> str:
    return f"{_grouped(inputs[0])}^{_grouped(inputs[1])}"


def _with_alpha(sign: str) -> Callable[[Any, list[str]], str]:
    def spelled(node: Any, inputs: list[str]) -> str:
        alpha = float(getattr(node, "_saved_alpha", 1) or 1)
        right = inputs[1] if alpha == 1 else f"{format_number(alpha)}·{_grouped(inputs[1])}"
        return f"{inputs[0]}{sign}{right}"

    return spelled


def _rsub(node: Any, inputs: list[str]) -> str:
    return f"c − {_grouped(inputs[0])}"


def _mean(node: Any, inputs: list[str]) -> str:
    return f"mean({inputs[0]})"


_SPECIAL: dict[str, Callable[[Any, list[str]], str]] = {
    "PowBackward0": _pow_scalar,
    "PowBackward1": _pow_tensor,
    "AddBackward0": _with_alpha(" + "),
    "SubBackward0": _with_alpha(" − "),
    "RsubBackward1": _rsub,
    "MeanBackward0": _mean,
    "MeanBackward1": _mean,
}


def node_formulas(*, root: Any, catalog: NodeCatalog) -> dict[str, str]:
    """The formula of every operation reachable from `root`, by node id."""
    formulas = _Formulas(catalog)
    for node in reversed(walk_nodes(root)):  # inputs before their consumers: shallow recursion
        if not is_leaf_node(node):
            formulas.formula(node)
    return formulas.found
