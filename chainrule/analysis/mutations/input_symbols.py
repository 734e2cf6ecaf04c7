"""How a student names the inputs of a node: a variable (x, W, h), or a
short expression of one (x², 3·x, W @ x, a[2], h.detach()) when the program
never named it. What cannot be written briefly gets a placeholder symbol that
no program variable uses, and the words say what it stands for."""

from __future__ import annotations

from typing import Any

import torch

from chainrule.analysis.node_catalog import NodeCatalog, index_formula, is_leaf_node, output_formula
from chainrule.op_names import op_name
from chainrule.values import format_number, format_value, is_number_text

MAX_DEPTH = 3
MAX_CHARS = 24
MAX_SHOWN_ENTRIES = 4  # an unnamed constant is written out up to this many entries
PLACEHOLDERS = ("u", "v", "s", "q", "p", "t", "ξ")
FUNCTIONS = frozenset({"sin", "cos", "tanh", "sigmoid", "exp", "log", "sqrt", "relu", "abs", "softplus",
                       "leaky_relu", "clamp", "logsumexp", "softmax", "log_softmax", "mean", "sum", "neg",
                       "max", "min"})
MATRIX_PRODUCTS = frozenset({"mm", "mv", "bmm", "dot", "matmul"})
TRANSPARENT = frozenset({"expand", "view", "reshape", "reshape_alias", "unsafe_view", "squeeze", "unsqueeze",
                         "clone", "alias"})
SIGNS = {"mul": "·", "add": " + ", "sub": " - ", "div": "/"}


def placeholder(catalog: NodeCatalog) -> str:
    """A symbol for an unnamed intermediate that no variable of the program uses."""
    key = (0, -1)
    if key not in catalog.labels:
        names = set(catalog.run.namespace)
        catalog.labels[key] = next((symbol for symbol in PLACEHOLDERS if symbol not in names), PLACEHOLDERS[-1])
    return catalog.labels[key]


def node_label(node: Any, catalog: NodeCatalog, depth: int = 0, output: int = 0) -> str:
    """The label of output `output` of `node` (only an op with several outputs has more than output 0)."""
    key = (id(node), depth, output) if output else (id(node), depth)
    if key not in catalog.labels:
        catalog.labels[key] = _node_label(node, catalog, depth, output)
    return catalog.labels[key]


def _node_label(node: Any, catalog: NodeCatalog, depth: int, output: int) -> str:
    if is_leaf_node(node):
        return catalog.node_name(node)
    named = catalog.output_tensor_name(node, output)
    if named:
        return named
    text = _expression(node, catalog, depth, output)
    return text if text is not None and len(text) <= MAX_CHARS else placeholder(catalog)


def wrapped(text: str) -> str:
    """Parentheses around a sum, product or quotient, not around a name or a call such as h.detach()."""
    depth, previous = 0, " "
    for char in text:
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif depth == 0 and char in " +-·/@" and not (char == "-" and previous in "^e"):
            return f"({text})"
        previous = char
    return text


def tensor_label(tensor: torch.Tensor, catalog: NodeCatalog, depth: int = 0) -> str | None:
    """An operand autograd does not track: its variable, `h.detach()`, or its number(s)."""
    name = catalog.tensor_name(tensor)
    if name is not None:
        return name
    detach = next((op for op in catalog.run.ops if op.is_detach and op.output is tensor and op.inputs), None)
    if detach is not None and depth < MAX_DEPTH:
        source = detach.inputs[0]
        inner = catalog.tensor_name(source) or (node_label(source.grad_fn, catalog, depth + 1, source.output_nr)
                                                if source.grad_fn is not None else None)
        if inner is not None and inner != placeholder(catalog):
            return f"{wrapped(inner)}.detach()"
    if tensor.numel() == 1:
        return format_number(float(tensor))
    if tensor.numel() <= MAX_SHOWN_ENTRIES and tensor.dim() == 1:
        return format_value(tensor.detach().double().tolist())
    return None


SAVED_INPUTS = {
    "MmBackward0": ("_saved_self", "_saved_mat2"), "BmmBackward0": ("_saved_self", "_saved_mat2"),
    "MvBackward0": ("_saved_self", "_saved_vec"), "DotBackward0": ("_saved_self", "_saved_tensor"),
    "AddmmBackward0": ("", "_saved_mat1", "_saved_mat2"),
}


def _untracked(node: Any, catalog: NodeCatalog, slot: int, depth: int) -> str | None:
    """The label of input `slot` when autograd does not track it (no next function)."""
    op = catalog.op_for(node)
    if op is not None and len(op.inputs) == len(node.next_functions):
        found = tensor_label(op.inputs[slot], catalog, depth)
        if found is not None:
            return found
    if op is not None and len(op.scalars) == 1 and len(op.inputs) == len(node.next_functions) - 1:
        return catalog.number_label(op.scalars[0])  # the 1 of 1 + x, the 0.5 of y - 0.5, a parameter c
    names = SAVED_INPUTS.get(type(node).__name__, ("_saved_self", "_saved_other"))
    saved = getattr(node, names[slot], None) if slot < len(names) and names[slot] else None
    return catalog.constant_label(saved)


def _operand(node: Any, catalog: NodeCatalog, slot: int, depth: int) -> str | None:
    child, output = node.next_functions[slot]
    if child is None:
        return _untracked(node, catalog, slot, depth)
    label = node_label(child, catalog, depth + 1, output)
    return None if label == placeholder(catalog) else label


def _expression(node: Any, catalog: NodeCatalog, depth: int, output: int = 0) -> str | None:
    if depth >= MAX_DEPTH:
        return None
    name = op_name(type(node).__name__)
    inputs = [_operand(node, catalog, slot, depth) for slot in range(len(node.next_functions))]
    if any(item is None for item in inputs) or not inputs:
        return None
    shapes = catalog.output_shapes(node)
    if len(shapes) > 1:
        return output_formula(node, output, [item or "" for item in inputs], wrapped, shapes)
    first = inputs[0] or ""
    if name == "pow":
        return f"{wrapped(first)}^{format_number(float(node._saved_exponent))}"
    if name in SIGNS and len(inputs) == 2:
        return _binary(name, inputs[0] or "", inputs[1] or "", node)
    if name in SIGNS and len(inputs) == 1:
        return _with_scalar(name, first, node, catalog)
    if name in MATRIX_PRODUCTS and len(inputs) == 2:
        return f"{wrapped(first)} @ {wrapped(inputs[1] or '')}"
    if name in ("slice", "select"):
        return index_formula(node, wrapped(first))
    if name in TRANSPARENT and len(inputs) == 1:
        return first  # the same entries, another shape: the student names it as the tensor itself
    if name in ("permute", "t", "transpose"):
        return f"{wrapped(first)}ᵀ"
    if name in FUNCTIONS:
        return f"-{wrapped(first)}" if name == "neg" else f"{name}({first})"
    return None


def _with_scalar(name: str, operand: str, node: Any, catalog: NodeCatalog) -> str | None:
    """x * 3, 1 + x, x - 0.5, 2 / x: one tensor and a Python number."""
    other = catalog.constant_label(getattr(node, "_saved_other", None))
    if name == "mul" and other is not None:
        return f"{other}·{wrapped(operand)}"
    op = catalog.op_for(node)
    if op is None or len(op.scalars) != 1:
        return None
    number = catalog.number_label(op.scalars[0])
    reflected = op.func_name.startswith("__r") or type(node).__name__.startswith("Rsub")
    left, right = (number, operand) if reflected else (operand, number)
    if name in ("mul", "div"):
        left, right = wrapped(left), wrapped(right)
    elif name == "sub":
        right = wrapped(right)
    return f"{left}{SIGNS[name]}{right}"


def _binary(name: str, left: str, right: str, node: Any) -> str:
    if name == "mul" and node.next_functions[1][0] is None and node.next_functions[0][0] is not None \
            and is_number_text(right):
        return f"{right}·{wrapped(left)}"  # 3 * x and x * 3 both read 3·x
    if name in ("mul", "div"):
        left, right = wrapped(left), wrapped(right)
    elif name == "sub":
        right = wrapped(right) if " + " in right or " - " in right else right
    return f"{left}{SIGNS[name]}{right}"


def input_labels(node: Any, catalog: NodeCatalog) -> list[str]:
    labels = []
    for slot, (child, output) in enumerate(node.next_functions):
        if child is not None:
            labels.append(node_label(child, catalog, output=output))
        else:
            labels.append(_untracked(node, catalog, slot, 0) or "the constant")
    return labels
