"""How a student names the inputs of a node: a variable (x, W, h), or a
short expression of one (x², 2·x, tanh(a)) when the program never named it."""

from __future__ import annotations

from typing import Any

from chainrule.analysis.node_catalog import NodeCatalog, is_leaf_node
from chainrule.op_names import op_name
from chainrule.values import format_number

MAX_DEPTH = 3
MAX_CHARS = 24
FUNCTIONS = frozenset({"sin", "cos", "tanh", "sigmoid", "exp", "log", "sqrt", "relu", "abs", "softplus",
                       "leaky_relu", "clamp", "logsumexp", "softmax", "log_softmax", "mean", "sum", "neg"})


def _constant(node: Any, catalog: NodeCatalog, attribute: str) -> str | None:
    return catalog.constant_label(getattr(node, attribute, None))


def node_label(node: Any, catalog: NodeCatalog, depth: int = 0) -> str:
    if is_leaf_node(node):
        return catalog.node_name(node)
    named = catalog.output_tensor_name(node)
    if named:
        return named
    text = _expression(node, catalog, depth)
    return text if text is not None and len(text) <= MAX_CHARS else "u"


def _wrapped(text: str) -> str:
    return f"({text})" if any(sign in text for sign in " +-·/") else text


def _expression(node: Any, catalog: NodeCatalog, depth: int) -> str | None:
    if depth >= MAX_DEPTH:
        return None
    name = op_name(type(node).__name__)
    inputs = [node_label(child, catalog, depth + 1) if child is not None else None
              for child, _ in node.next_functions]
    if name == "pow" and inputs and inputs[0] is not None:
        return f"{_wrapped(inputs[0])}^{format_number(float(node._saved_exponent))}"
    if name in ("mul", "add", "sub", "div") and len(inputs) == 2:
        left = inputs[0] or _constant(node, catalog, "_saved_self")
        right = inputs[1] or _constant(node, catalog, "_saved_other")
        if left is None or right is None:
            return None
        sign = {"mul": "·", "add": " + ", "sub": " - ", "div": "/"}[name]
        if name in ("mul", "div"):
            left, right = _wrapped(left), _wrapped(right)
        return f"{left}{sign}{right}"
    if name in ("mul", "add", "sub", "div") and len(inputs) == 1 and inputs[0] is not None:
        other = _constant(node, catalog, "_saved_other")
        if name == "mul" and other is not None:
            return f"{other}·{_wrapped(inputs[0])}"
        return None
    if name in ("permute", "t", "transpose") and inputs and inputs[0] is not None:
        return f"{_wrapped(inputs[0])}ᵀ"
    if name in FUNCTIONS and inputs and inputs[0] is not None:
        return f"-{_wrapped(inputs[0])}" if name == "neg" else f"{name}({inputs[0]})"
    return None


SAVED_INPUTS = {
    "MmBackward0": ("_saved_self", "_saved_mat2"), "BmmBackward0": ("_saved_self", "_saved_mat2"),
    "MvBackward0": ("_saved_self", "_saved_vec"), "DotBackward0": ("_saved_self", "_saved_tensor"),
    "AddmmBackward0": ("", "_saved_mat1", "_saved_mat2"),
}


def input_labels(node: Any, catalog: NodeCatalog) -> list[str]:
    labels = []
    names = SAVED_INPUTS.get(type(node).__name__, ("_saved_self", "_saved_other"))
    saved = [getattr(node, name, None) if name else None for name in names]
    for slot, (child, _) in enumerate(node.next_functions):
        constant = saved[slot] if slot < len(saved) else None
        if child is not None:
            labels.append(node_label(child, catalog))
        else:
            labels.append(catalog.operand_label(constant))
    return labels
