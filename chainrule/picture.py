"""The computational graph as SVG: Graphviz DOT written from the Analysis and
rendered by the `dot` binary. Leaves are ellipses, operations rounded boxes,
untracked tensors grey, detach cuts dashed grey; a diagnosis highlight draws
wrong or extra edges in thick red and missing ones in dashed orange."""

from __future__ import annotations

import shutil
import subprocess

from chainrule.model import Analysis, Edge, GraphNode, Highlight
from chainrule.values import Value, format_shape, format_value

MAX_VALUE_LABEL = 32
TINY = 1e-6
DOT_TIMEOUT_SECONDS = 10


class GraphvizMissing(RuntimeError):
    """The `dot` binary is not installed (apt-get install graphviz)."""


def quoted(text: str) -> str:
    """A DOT string literal; backslashes are escaped so labels cannot inject
    Graphviz escapes such as \\N or close the string."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def value_label(node: GraphNode) -> str:
    value = node.value
    while isinstance(value, list) and len(value) == 1:
        value = value[0]  # tensor([7.]) reads better as 7 on a picture
    text = _label_text(value) if value is not None else ""
    if not text or len(text) > MAX_VALUE_LABEL:
        return f"shape {format_shape(node.shape)}" if node.shape else ""
    return text


def _label_text(value: Value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_label_text(item) for item in value) + "]"
    if value is not None and value != 0 and abs(value) < TINY:
        return "≈0"  # float32 round-off such as 0.5 - 0.6 + 0.1 = -2.2e-08
    return format_value(value)


def node_statement(node: GraphNode, *, highlighted: bool, output_names: set[str]) -> str:
    value = value_label(node)
    if node.kind == "op":
        # The output node already shows z = …; the op that made z shows just its value.
        show_name = node.tensor_name and node.tensor_name not in output_names
        named = f"{node.tensor_name} = {value}" if show_name else value
        attributes = {"shape": "box", "style": "rounded", "label": f"{node.name}\n{named}".strip()}
    else:
        joiner = "\n" if value.startswith("shape") else " = "
        attributes = {"shape": "ellipse", "label": f"{node.name}{joiner}{value}" if value else node.name}
    if node.kind == "output":
        attributes["peripheries"] = "2"
    if not node.tracked:
        attributes.update(style="filled,dashed", fillcolor="#eeeeee", color="gray55", fontcolor="gray35")
        attributes["label"] += "\nnot tracked"
    if highlighted:
        attributes.update(color="red", penwidth="2.5")
    return f"  {quoted(node.id)} [{_attributes(attributes)}];"


def edge_statement(edge: Edge, *, cut: bool, wrong: bool, missing: bool) -> str:
    attributes: dict[str, str] = {}
    if cut:
        attributes.update(style="dashed", color="gray55", fontcolor="gray35", label="detach: no gradient")
    if missing:
        attributes.update(style="dashed", color="orange", penwidth="2.5")
    elif wrong:
        attributes.update(color="red", penwidth="2.5")
    suffix = f" [{_attributes(attributes)}]" if attributes else ""
    return f"  {quoted(edge[0])} -> {quoted(edge[1])}{suffix};"


def _attributes(attributes: dict[str, str]) -> str:
    return ", ".join(f"{key}={quoted(value)}" for key, value in attributes.items())


def graph_dot(*, analysis: Analysis, highlight: Highlight | None = None, title: str | None = None) -> str:
    highlight = highlight or Highlight()
    graph = analysis.graph
    outputs = ", ".join(dict.fromkeys(call.output for call in analysis.backward_calls))
    title = title or (f"Computational graph of {outputs}" if outputs else "Computational graph")
    lines = [
        f"digraph {quoted(title)} {{",
        f'  graph [rankdir="LR", fontname="Helvetica", label={quoted(title)}, labelloc="t"];',
        '  node [fontname="Helvetica", fontsize="11"];',
        '  edge [fontname="Helvetica", fontsize="9"];',
    ]
    output_names = {node.name for node in graph.nodes if node.kind == "output"}
    lines += [
        node_statement(node, highlighted=node.id in highlight.nodes, output_names=output_names)
        for node in graph.nodes
    ]
    drawn = {(edge.source, edge.target): edge.cut for edge in graph.edges}
    extra = [edge for edge in [*highlight.wrong_edges, *highlight.missing_edges] if edge not in drawn]
    for edge in [*drawn, *dict.fromkeys(extra)]:
        lines.append(edge_statement(edge, cut=drawn.get(edge, False),
                                    wrong=edge in highlight.wrong_edges, missing=edge in highlight.missing_edges))
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_svg(dot_text: str) -> str:
    binary = shutil.which("dot")
    if binary is None:
        raise GraphvizMissing("Graphviz is not installed: the `dot` binary was not found on PATH")
    completed = subprocess.run(  # noqa: S603 - fixed argv, DOT text on stdin
        [binary, "-Tsvg"], input=dot_text.encode(), capture_output=True,
        timeout=DOT_TIMEOUT_SECONDS, check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"dot failed: {completed.stderr.decode(errors='replace')[:500]}")
    return completed.stdout.decode()


def graph_svg(*, analysis: Analysis, highlight: Highlight | None = None, title: str | None = None) -> str:
    return render_svg(graph_dot(analysis=analysis, highlight=highlight, title=title))
