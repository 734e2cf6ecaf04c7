"""The computational graph as SVG, drawn like the visual walkthrough: forward
values in blue on the nodes, each edge's local derivative on it, the backward
flow in red (the number travelling back on each edge and the gradient arriving
at each node, with the contributions that merge there), and the diagnosis on
top: the wrong edge thick purple, missing edges dashed orange, detach cuts
dashed grey. Graphviz DOT written from the Analysis, rendered by `dot`.

Big graphs stay readable by saying less: past FULL_DETAIL nodes the edge labels
go, past NODE_DETAIL the node values too; the legend says so."""

from __future__ import annotations

import functools
import html
import shutil
import subprocess
import textwrap
from collections.abc import Mapping

from chainrule.model import Analysis, Edge, GraphNode, Highlight
from chainrule.picture.disclosure import Disclosure, Hidden, hidden_for
from chainrule.picture.labels import Labels

DOT_TIMEOUT_SECONDS = 10
FULL_DETAIL = 40  # nodes: up to here every label is drawn
NODE_DETAIL = 200  # up to here nodes keep their values and gradients, edges lose their labels
FORWARD = "#1a56b0"
FLOW = "#c62828"
WRONG = "#6a1b9a"
MISSING = "#a14f05"  # every colour reads at 4.5:1 or more on white and on the untracked grey
DETACHED = "#5f5f5f"
INK = "#333333"
LEGEND_WIDTH = 44  # characters per line of a legend note


class GraphvizMissing(RuntimeError):
    """The `dot` binary is not installed (apt-get install graphviz)."""


def quoted(text: str) -> str:
    """A DOT string literal; backslashes are escaped so labels cannot inject
    Graphviz escapes such as \\N or close the string."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _html(text: str, color: str | None = None, *, bold: bool = False, size: int | None = None) -> str:
    core = text.strip(" ")
    start = text.index(core) if core else 0
    # Graphviz trims spaces at the ends of a text run: keep them as no-break spaces.
    body = "\u00a0" * start + html.escape(core, quote=False) + "\u00a0" * (len(text) - start - len(core))
    if bold:
        body = f"<b>{body}</b>"
    attributes = (f' color="{color}"' if color else "") + (f' point-size="{size}"' if size else "")
    return f"<font{attributes}>{body}</font>" if attributes else body


def _attributes(attributes: dict[str, str]) -> str:
    return ", ".join(f"{key}={value if value.startswith('<') else quoted(value)}" for key, value in attributes.items())


def _same_formula(first: str, second: str) -> bool:
    return bool(second) and first.replace(" ", "") == second.replace(" ", "")


class _Drawing:
    def __init__(self, analysis: Analysis, highlight: Highlight, hidden: Hidden, notes: Mapping[Edge, str]) -> None:
        self.analysis = analysis
        self.highlight = highlight
        self.labels = Labels(analysis, hidden)
        self.notes = notes
        size = len(analysis.graph.nodes)
        self.edge_labels = size <= FULL_DETAIL
        self.node_values = size <= NODE_DETAIL

    def node(self, node: GraphNode) -> str:
        lines = [_html(node.name, INK, bold=True, size=11)] if node.kind == "op" else []
        if self.node_values:
            forward = self.labels.forward(node)
            if forward and forward != node.name:
                lines.append(_html(forward, FORWARD if node.tracked else DETACHED))
            elif node.kind != "op":
                lines.append(_html(node.name, FORWARD if node.tracked else DETACHED))
            gradient = self.labels.gradient(node)
            if gradient:
                lines.append(_html(gradient, FLOW, bold=True))
        elif node.kind != "op" or node.tensor_name:
            lines.append(_html(node.tensor_name or node.name, FORWARD))
        if not node.tracked:
            lines.append(_html("not tracked", DETACHED, size=10))
        attributes = {"shape": "box", "style": "rounded"} if node.kind == "op" else {"shape": "ellipse"}
        attributes["label"] = "<" + "<br/>".join(lines) + ">"
        if node.kind == "output":
            attributes["peripheries"] = "2"
        if not node.tracked:
            attributes.update(style="filled,dashed", fillcolor="#f0f0f0", color=DETACHED)
        if node.id in self.highlight.nodes:
            attributes.update(color=WRONG, penwidth="3")
        return f"  {quoted(node.id)} [{_attributes(attributes)}];"

    def edges(self, edge: Edge, *, cut: bool) -> list[str]:
        """The edge with its slope and, red, the gradient sent back along it; drawn once per operand when
        the op takes its input more than once (x*x: first and second factor, whose paths add). Of a wrong
        edge so drawn, the last copy carries the mistake: the student counted the others."""
        copies = self.labels.operands(edge)
        wrong = edge in self.highlight.wrong_edges
        # x·x taken as x: the student counted one factor's path, so the other is the path left out.
        one_counted = wrong and self.labels.counted_once(edge, self.notes.get(edge, ""))
        lines = []
        for index, operand in enumerate(copies):
            last = index == len(copies) - 1
            lines += self._edge(edge, operand, cut=cut, wrong=wrong and last and not one_counted,
                                missing=edge in self.highlight.missing_edges or (one_counted and last))
        return lines

    def _edge(self, edge: Edge, operand: str, *, cut: bool, wrong: bool, missing: bool) -> list[str]:
        attributes = {"color": INK, "fontcolor": INK}
        text = self.labels.slope(edge) if self.edge_labels else ""
        text = f"{operand}: {text}" if operand and text else operand or text
        if cut:
            attributes.update(style="dashed", color=DETACHED, fontcolor=DETACHED)
            text = "detach: no gradient"
        if missing:
            attributes.update(style="dashed", color=MISSING, fontcolor=MISSING, penwidth="3")
            text = f"missing: {text}" if text else "missing"
        elif wrong:
            attributes.update(color=WRONG, fontcolor=WRONG, penwidth="3.5")
            text = self._wrong_label(edge, text, cut=cut)
        if text:
            attributes["label"] = f"<{_html(text, bold=wrong or missing)}>"
        lines = [f"  {quoted(edge[0])} -> {quoted(edge[1])} [{_attributes(attributes)}];"]
        message = self.labels.message(edge) if self.edge_labels and not cut else ""
        if message:
            flow = {"dir": "back", "color": FLOW, "fontcolor": FLOW, "arrowtail": "normal",
                    "label": f"<{_html('← ' + message, bold=True)}>"}
            lines.append(f"  {quoted(edge[0])} -> {quoted(edge[1])} [{_attributes(flow)}];")
        return lines

    def _wrong_label(self, edge: Edge, slope: str, *, cut: bool) -> str:
        """The grader's note (what the student used), with the right slope as every other edge
        shows it (`∂b/∂x = 2·x = 4`) when the note names none or names that same factor."""
        note = self.notes.get(edge, "")
        if cut:
            return note or "✗ detach: no gradient flows back here"
        used, _, right = note.partition("; right: ")
        if used and slope == self.labels.slope_head(edge):  # its rule is the answer: only which slope to fix
            return f"{used} for {slope}"
        if used and slope and (not right or _same_formula(right, self.labels.slope_formula(edge))):
            return f"{used}; right: {slope}"
        return note or (f"✗ {slope}" if slope else "✗")

    def legend(self, title: str, hidden: Hidden) -> str:
        keys = [[_html("blue", FORWARD, bold=True) + _html(": forward values"),
                 _html("red ←", FLOW, bold=True) + _html(": the gradient flowing back")],
                [_html("on each edge: its local derivative"),
                 _html("━━ purple", WRONG, bold=True) + _html(": the edge you got wrong")],
                [_html("╍╍ orange", MISSING, bold=True) + _html(": a path you left out"),
                 _html("┄┄ grey", DETACHED, bold=True) + _html(": detached, no gradient")]]
        notes = []
        if hidden.grads - {n.id for n in self.analysis.graph.nodes if n.kind == "output"}:
            notes.append("Some gradients, and the numbers of the slopes on their paths, are hidden: "
                         "they would give away answers you have not got yet.")
        size = len(self.analysis.graph.nodes)
        if not self.edge_labels:
            kept = "names and values" if self.node_values else "names"
            notes.append(f"{size} nodes: only the {kept} of the nodes are drawn; "
                         "edge labels (local derivatives, backward flow) are left out.")
        # One column, notes wrapped: the legend must not make a small graph's picture wide (on a
        # phone the picture is shrunk to the screen's width, legend included).
        rows = [_html(title, INK, bold=True, size=13), *(item for row in keys for item in row)]
        rows += ["<br/>".join(_html(line, INK, size=11) for line in textwrap.wrap(note, LEGEND_WIDTH))
                 for note in notes]
        rows = [f'<tr><td align="left" balign="left">{row}</td></tr>' for row in rows]
        return f'<<table border="0" cellborder="0" cellspacing="0" cellpadding="1">{"".join(rows)}</table>>'


def graph_dot(
    *, analysis: Analysis, highlight: Highlight | None = None, title: str | None = None,
    disclosure: Disclosure | None = None, edge_notes: Mapping[Edge, str] | None = None,
) -> str:
    """`disclosure` says which answers this viewer may see (default: none, so no asked-for gradient)."""
    highlight = highlight or Highlight()
    hidden = hidden_for(analysis, disclosure or Disclosure())
    drawing = _Drawing(analysis, highlight, hidden, edge_notes or {})
    outputs = ", ".join(dict.fromkeys(call.output for call in analysis.backward_calls))
    title = title or (f"Computational graph of {outputs}" if outputs else "Computational graph")
    compact = not drawing.node_values  # a big graph: small, tight nodes
    spacing = 'nodesep="0.12", ranksep="0.3"' if compact else 'nodesep="0.35"'
    lines = [
        f"digraph {quoted(title)} {{",
        f'  graph [rankdir="TB", fontname="Helvetica", labelloc="t", labeljust="l", {spacing}, '
        f'label={drawing.legend(title, hidden)}];',
        f'  node [fontname="Helvetica", fontsize="{10 if compact else 12}"'
        f'{", margin=" + quoted("0.04,0.02") if compact else ""}];',
        '  edge [fontname="Helvetica", fontsize="11"];',
    ]
    lines += [drawing.node(node) for node in analysis.graph.nodes]
    drawn = {(edge.source, edge.target): edge.cut for edge in analysis.graph.edges}
    extra = [edge for edge in [*highlight.wrong_edges, *highlight.missing_edges] if edge not in drawn]
    for edge in [*drawn, *dict.fromkeys(extra)]:
        lines += drawing.edges(edge, cut=drawn.get(edge, False))
    lines.append("}")
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=128)
def render_svg(dot_text: str) -> str:
    """The SVG of `dot_text`. Remembered per process (the same DOT gives the same SVG): a picture
    viewed again, or requested in a loop, runs Graphviz once."""
    binary = shutil.which("dot")
    if binary is None:
        raise GraphvizMissing("Graphviz is not installed: the `dot` binary was not found on PATH")
    completed = subprocess.run(  # fixed argv, DOT text on stdin
        [binary, "-Tsvg"], input=dot_text.encode(), capture_output=True,
        timeout=DOT_TIMEOUT_SECONDS, check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"dot failed: {completed.stderr.decode(errors='replace')[:500]}")
    return completed.stdout.decode()


def graph_svg(
    *, analysis: Analysis, highlight: Highlight | None = None, title: str | None = None,
    disclosure: Disclosure | None = None, edge_notes: Mapping[Edge, str] | None = None,
) -> str:
    return render_svg(graph_dot(analysis=analysis, highlight=highlight, title=title, disclosure=disclosure,
                                edge_notes=edge_notes))
