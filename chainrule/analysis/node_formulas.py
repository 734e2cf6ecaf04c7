"""What each operation computes, in the student's symbols: `x·y`, `x³`, `4·x`,
`a + b`, `tanh(h)`. Constants and exponents come from what autograd saved
on the node (the 3 of x**3, the 4 of 4*x), so the picture shows them."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from chainrule.analysis.node_catalog import (
    NodeCatalog,
    index_formula,
    is_leaf_node,
    output_formula,
    walk_nodes,
)
from chainrule.op_names import op_name
from chainrule.values import format_number

MAX_INLINE = 28  # an unnamed input longer than this is called by its op name
_SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_PREFIX = {"neg": "−{0}", "t": "{0}ᵀ", "transpose": "{0}ᵀ", "sum": "Σ {0}", "exp": "e^{0}"}
_INFIX = {"add": " + ", "sub": " − ", "mul": "·", "div": " / ", "mm": " @ ", "mv": " @ ", "matmul": " @ ",
          "bmm": " @ ", "dot": " @ "}
# Where autograd keeps an operand that needs no gradient (the 4 of 4*x, the data x of W @ x), by slot.
_SAVED_OPERANDS = (("_saved_self",), ("_saved_other", "_saved_vec", "_saved_mat2", "_saved_tensor"))


def power(base: str, exponent: float) -> str:
    """x², x⁻¹, x^0.5: integers as superscripts, other exponents spelled out."""
    if exponent == int(exponent) and abs(exponent) < 100:
        return f"{_grouped(base)}{format_number(exponent).translate(_SUPERSCRIPTS)}"
    return f"{_grouped(base)}^{format_number(exponent)}"


def _grouped(label: str) -> str:
    """Parentheses unless the label is one atom: a name, a number, f(…), x², xᵀ."""
    depth = 0
    for char in label:
        depth += (char == "(") - (char == ")")
        if depth == 0 and char in " ·/^@":
            return f"({label})"
    return label if not label.startswith("-") or _is_number(label) else f"({label})"


def _is_number(label: str) -> bool:
    try:
        return math.isfinite(float(label))
    except ValueError:
        return False


class _Formulas:
    def __init__(self, catalog: NodeCatalog) -> None:
        self.catalog = catalog
        self.found: dict[str, str] = {}

    def symbol(self, node: Any, output: int = 0) -> str:
        """How an input reads inside its consumer's formula."""
        if is_leaf_node(node):
            return self.catalog.node_name(node)
        name = self.catalog.output_tensor_name(node, output)
        if name:
            return name
        formula = self.formula(node, output)
        return formula if len(formula) <= MAX_INLINE else op_name(type(node).__name__)

    def formula(self, node: Any, output: int = 0) -> str:
        node_id = self.catalog.node_id(node, output)
        if node_id not in self.found:
            self.found[node_id] = self._describe(node, output)
        return self.found[node_id]

    def _inputs(self, node: Any) -> list[str]:
        labels = []
        for slot, (child, child_output) in enumerate(getattr(node, "next_functions", ())):
            if child is not None:
                labels.append(self.symbol(child, child_output))
            else:
                names = _SAVED_OPERANDS[slot] if slot < len(_SAVED_OPERANDS) else ()
                saved = (getattr(node, name, None) for name in names)
                labels.append(self.catalog.operand_label(next((t for t in saved if t is not None), None)))
        kind = type(node).__name__
        if kind == "RsubBackward1" and len(labels) == 1:  # 1 - x: autograd keeps only x
            return [self._offset(node, _CONSTANT_FROM[(kind, 0)]), labels[0]]
        if labels.count("c") == 1 and len(labels) == 2 and (kind, labels.index("c")) in _CONSTANT_FROM:
            offset = self._offset(node, _CONSTANT_FROM[(kind, labels.index("c"))])
            labels = [offset if label == "c" else label for label in labels]
        return labels

    def _offset(self, node: Any, signs: tuple[float, float]) -> str:
        """The python number of x + 3 is not saved on the node: it is what the output adds to the input."""
        op = self.catalog.op_for(node)
        child, output = next(((child, output) for child, output in node.next_functions if child is not None),
                             (None, 0))
        given = self.catalog.forward_value(child, output) if child is not None else None
        if op is None or given is None:
            return "c"
        try:
            difference = signs[0] * op.value.double() + signs[1] * given.double()
        except RuntimeError:
            return "c"
        if difference.numel() == 0 or not torch.allclose(difference, difference.reshape(-1)[0]):
            return "c"
        return format_number(float(f"{float(difference.reshape(-1)[0]):.6g}"))

    def _describe(self, node: Any, output: int = 0) -> str:
        name = op_name(type(node).__name__)
        inputs = self._inputs(node)
        shapes = self.catalog.output_shapes(node)
        if len(shapes) > 1:
            return output_formula(node, output, inputs, _grouped, shapes)
        special = _SPECIAL.get(type(node).__name__)
        if special is not None:
            return special(node, inputs)
        indexed = index_formula(node, _grouped(inputs[0])) if len(inputs) == 1 else None
        if indexed is not None:
            return indexed  # x[1:3], W[:, 2]
        if name == "mul" and len(inputs) == 2 and _is_number(inputs[1]):
            inputs = inputs[::-1]  # 4·x, as the course writes a scaled input
        if name in _INFIX and len(inputs) == 2:
            return _INFIX[name].join(_grouped(label) if name != "add" else label for label in inputs)
        if name in _PREFIX and len(inputs) == 1:
            return _PREFIX[name].format(_grouped(inputs[0]))
        return f"{name}({', '.join(inputs)})"


# The constant operand c of out = x + c, x − c, c − x, as (a, b) in c = a·out + b·x, by (node, slot of c).
_CONSTANT_FROM = {
    ("AddBackward0", 0): (1.0, -1.0), ("AddBackward0", 1): (1.0, -1.0),
    ("SubBackward0", 0): (1.0, 1.0), ("SubBackward0", 1): (-1.0, 1.0), ("RsubBackward1", 0): (1.0, 1.0),
}


def _pow_scalar(node: Any, inputs: list[str]) -> str:
    return power(inputs[0], float(node._saved_exponent))


def _pow_tensor(node: Any, inputs: list[str]) -> str:
    return f"{_grouped(inputs[0])}^{_grouped(inputs[1])}"


def _with_alpha(sign: str) -> Callable[[Any, list[str]], str]:
    def spelled(node: Any, inputs: list[str]) -> str:
        alpha = float(getattr(node, "_saved_alpha", 1) or 1)
        if alpha == 1 and _is_number(inputs[1]) and inputs[1].startswith("-"):  # y − 0.4, not y + -0.4
            return f"{inputs[0]}{' − ' if sign == ' + ' else ' + '}{inputs[1][1:]}"
        right = inputs[1] if alpha == 1 and sign == " + " else _grouped(inputs[1])
        right = right if alpha == 1 else f"{format_number(alpha)}·{_grouped(inputs[1])}"
        return f"{inputs[0]}{sign}{right}"

    return spelled


def _permute(node: Any, inputs: list[str]) -> str:
    dims = tuple(getattr(node, "_saved_dims", ()))
    return f"{_grouped(inputs[0])}ᵀ" if dims == (1, 0) else f"permute({inputs[0]})"


def _mean(node: Any, inputs: list[str]) -> str:
    return f"mean({inputs[0]})"


_SPECIAL: dict[str, Callable[[Any, list[str]], str]] = {
    "PowBackward0": _pow_scalar,
    "PowBackward1": _pow_tensor,
    "AddBackward0": _with_alpha(" + "),
    "SubBackward0": _with_alpha(" − "),
    "PermuteBackward0": _permute,
    "MeanBackward0": _mean,
    "MeanBackward1": _mean,
}


def node_formulas(*, root: Any, catalog: NodeCatalog) -> dict[str, str]:
    """The formula of every operation reachable from `root`, by node id."""
    formulas = _Formulas(catalog)
    for node in reversed(walk_nodes(root)):  # inputs before their consumers: shallow recursion
        if not is_leaf_node(node):
            for output in range(len(catalog.output_shapes(node))):
                formulas.formula(node, output)
    return formulas.found
