"""The words and numbers on the picture: what each node computes and holds
(forward, in blue), the gradient arriving at it (backward, in red, with each
path's contribution where several meet), and each edge's local derivative.
What the viewer may not see (chainrule/picture/disclosure.py) is left out."""

from __future__ import annotations

import re
from typing import Any

from chainrule.model import Analysis, Edge, GraphNode
from chainrule.picture.disclosure import Hidden
from chainrule.values import Value, format_value

MAX_VALUE_LABEL = 32
MAX_MERGED = 4  # contributions spelled out where paths meet; more would not fit on the node
MAX_FORMULA_LABEL = 30  # a longer formula is left to the op's name and its inputs' arrows
TINY = 1e-6
ORDINALS = ("first", "second", "third", "fourth")
NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?")
INDEXED = re.compile(r"[A-Za-z_][\w.]*\[[\d:, ]*\]")  # x[1], W[:, 0:2]: one symbol, no parentheses needed


def short_value(value: Value) -> str:
    """The value as a picture label; empty when unknown or too long to read on a node."""
    while isinstance(value, list) and len(value) == 1:
        value = value[0]  # tensor([7.]) reads better as 7 on a picture
    text = _value_text(value) if value is not None else ""
    return "" if len(text) > MAX_VALUE_LABEL else text


def shape_note(shape: list[int] | None) -> str:
    """`(2×4)`: what a node holds when its numbers do not fit on it."""
    return f"({'×'.join(str(size) for size in shape)})" if shape else ""


def _value_text(value: Value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_value_text(item) for item in value) + "]"
    if value is not None and value != 0 and abs(value) < TINY:
        return "≈0"  # float32 round-off such as 0.5 - 0.6 + 0.1 = -2.2e-08
    if value is not None and value != int(value) and abs(value) < 1e15:
        return f"{value:.5g}"  # five digits are plenty on a picture; the feedback text has them all
    return format_value(value)


class Labels:
    """Label texts for one picture (plain text; picture.py escapes and colours them)."""

    def __init__(self, analysis: Analysis, hidden: Hidden) -> None:
        self.analysis = analysis
        self.hidden = hidden
        self.nodes = {node.id: node for node in analysis.graph.nodes}
        outputs = list(dict.fromkeys(call.output for call in analysis.backward_calls))
        self.output = outputs[0] if len(outputs) == 1 else "out"
        self.messages: dict[Edge, Value] = {(m.source, m.target): m.value for m in analysis.edge_grads}
        self.slopes = {_edge_of(item): item for item in analysis.local_derivatives if _edge_of(item)}

    def symbol(self, node_id: str) -> str:
        node = self.nodes.get(node_id)
        if node is None:
            return node_id
        if node.kind != "op":
            return node.name
        formula = self.analysis.node_formulas.get(node.id)
        if node.tensor_name or not formula or len(formula) > 12:
            return node.tensor_name or node.name
        return formula if INDEXED.fullmatch(formula) else f"({formula})"  # ∂s/∂x[1], ∂s/∂(x·y)

    def forward(self, node: GraphNode) -> str:
        """`a = x·y = 6`, `x = 2`, `z = 10`; the value left out when it is an unrevealed answer."""
        withheld = node.id in self.hidden.values or (node.kind != "leaf" and self.hidden.tells(node.value))
        value = "" if withheld else short_value(node.value)
        note = "" if value or withheld else shape_note(node.shape)
        if node.kind != "op":
            return f"{node.name} = {value}" if value else f"{node.name} {note}".strip()
        formula = self.analysis.node_formulas.get(node.id, "")
        formula = formula if len(formula) <= MAX_FORMULA_LABEL else ""
        named = node.tensor_name if node.tensor_name and node.tensor_name != self.output_name_of(node) else ""
        pieces = [piece for piece in (named, formula, value) if piece]
        return f"{' = '.join(pieces)} {note}".strip()

    def output_name_of(self, node: GraphNode) -> str | None:
        return next((n.name for n in self.nodes.values() if n.kind == "output" and n.id == f"out:{node.id}"), None)

    def gradient(self, node: GraphNode) -> str:
        """`x.grad = 3 + 4 = 7`: the gradient arriving at the node, the merge spelled out."""
        if node.id not in self.analysis.node_grads or not node.tracked:
            return ""
        if node.id in self.hidden.grads and node.kind != "output":  # the seed is the program's, not an answer
            return ""
        if node.id not in self.hidden.known and self.hidden.tells(self.analysis.node_grads[node.id]):
            return ""
        total = short_value(self.analysis.node_grads[node.id])
        if not total:
            return f"{self._gradient_head(node)} {shape_note(node.shape)}" if node.kind != "output" else ""
        if node.kind == "output":
            return self._seed(node, total)
        messages = sorted(self.messages.items(), key=_by_target)
        incoming = [self.number(self.share(edge, value)) for edge, value in messages
                    if edge[0] == node.id for _ in self.operands(edge)]
        merged = " + ".join(incoming) if 1 < len(incoming) <= MAX_MERGED and all(incoming) else ""
        merged = merged.replace("+ -", "− ")
        return " = ".join(piece for piece in (self._gradient_head(node), merged, total) if piece)

    def _seed(self, node: GraphNode, total: str) -> str:
        """`∂z/∂z = 1`, or the seed the program passed; a backward call run twice without a seed
        starts at 1 each time (the gradients below add up both runs), never at a seed of 2."""
        calls = [call for call in self.analysis.backward_calls if call.output_node == node.id]
        if calls and not any(call.seed_given for call in calls):
            if self.hidden.tells(1.0):
                return ""
            runs = f" in each of {len(calls)} backward calls" if len(calls) > 1 else ""
            return f"∂{node.name}/∂{node.name} = 1{runs}"
        return f"∂{node.name}/∂{node.name} = {total}" if total == "1" else f"seed = {total}"

    def _gradient_head(self, node: GraphNode) -> str:
        return f"{node.name}.grad" if node.kind == "leaf" else f"∂{self.output}/∂{self.symbol(node.id)}"

    def slope(self, edge: Edge) -> str:
        """`∂a/∂x = y = 3`, from the engine's local derivatives; empty when it gave none."""
        item = self.slopes.get(edge)
        if item is None:
            return ""
        source, target = edge
        target_node = self.nodes.get(target)
        if target_node is not None and target_node.kind == "output":
            return ""
        formula = self.slope_formula(edge)
        value = "" if source in self.hidden.paths else self.number(_field(item, "value"))
        if _is_number(formula) and not value and self.hidden.tells(float(formula.replace("−", "-"))):
            formula = ""  # a constant slope (`1` of an add) is its own number
        pieces = [self.slope_head(edge), formula] + ([value] if value and value != formula else [])
        return " = ".join(piece for piece in pieces if piece)

    def slope_head(self, edge: Edge) -> str:
        return f"∂{self.symbol(edge[1])}/∂{self.symbol(edge[0])}"

    def slope_formula(self, edge: Edge) -> str:
        """The engine's local derivative of the edge as a formula (`2·x`); empty when it gave none."""
        item = self.slopes.get(edge)
        return str(_field(item, "formula") or "") if item is not None else ""

    def message(self, edge: Edge) -> str:
        """The gradient that travels back along the edge (along each of its copies when the op takes
        its input more than once), unless it tells an unrevealed answer."""
        if edge not in self.messages or edge[0] in self.hidden.grads:
            return ""
        return self.number(self.share(edge, self.messages[edge]))

    def operands(self, edge: Edge) -> list[str]:
        """`first factor`, `second factor` for the edge x → mul of `x*x`: one input in several slots
        of an op with the same local derivative in each, so each slot is a path of its own that adds.
        `[""]` for an ordinary edge."""
        item = self.slopes.get(edge)
        operands = _field(item, "operands") if item is not None else None
        if not operands or len(operands) > len(ORDINALS) or any(
                (_field(o, "formula"), _field(o, "value")) != (_field(item, "formula"), _field(item, "value"))
                for o in operands):
            return [""]
        node = self.nodes.get(edge[1])
        noun = {"mul": "factor", "add": "term"}.get(node.name if node else "", "operand")
        return [f"{ordinal} {noun}" for ordinal in ORDINALS[: len(operands)]]

    def counted_once(self, edge: Edge, note: str) -> bool:
        """Whether the grader's note on a wrong edge drawn once per operand (`✗ you used x; right: 2·x`
        on x*x) says the student took one operand's factor for the whole: the others' paths are missing."""
        used = note.partition("; right: ")[0].removeprefix("✗ you used ").removesuffix(" here").strip()
        return len(self.operands(edge)) > 1 and bool(used) and used == self.slope_formula(edge)

    def share(self, edge: Edge, value: Value) -> Value:
        """One copy's part of the gradient sent back along an edge drawn once per operand."""
        count = len(self.operands(edge))
        return value if count == 1 else _scaled(value, 1 / count)

    def number(self, value: Value) -> str:
        """A gradient or slope as printed, unless it states an undisclosed answer."""
        return "" if self.hidden.tells(value) else short_value(value)


def _scaled(value: Value, factor: float) -> Value:
    if isinstance(value, list):
        return [_scaled(item, factor) for item in value]
    return None if value is None else value * factor


def _is_number(text: str) -> bool:
    return bool(NUMBER.fullmatch(text.replace("−", "-").replace(" ", "")))


def _by_target(message: tuple[Edge, Value]) -> tuple[int, str]:
    """Contributions in program order (op3 before op10), as the course adds them: y + 2x."""
    target = message[0][1]
    digits = "".join(char for char in target if char.isdigit())
    return (int(digits) if digits else 0, target)


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def _edge_of(item: Any) -> Edge | None:
    source, target = _field(item, "source"), _field(item, "target")
    return (str(source), str(target)) if source is not None and target is not None else None
