"""The picture in words, for a screen reader and for anyone who would rather read than look: each
node with its value and the gradient arriving at it, each path from a leaf with its contribution,
and the student's wrong or missing edges. Built from the same labels as the picture, so it follows
the same disclosure (chainrule/picture/disclosure.py): what the picture leaves out, so do the words."""

from __future__ import annotations

from collections.abc import Mapping

from chainrule.model import Analysis, Edge, Highlight, PathContribution
from chainrule.picture.disclosure import Disclosure, hidden_for
from chainrule.picture.labels import Labels

MAX_WORDS_PATHS = 24  # a longer list would drown the reader; the picture has the rest


def graph_words(
    *, analysis: Analysis, highlight: Highlight | None = None, disclosure: Disclosure | None = None,
    edge_notes: Mapping[Edge, str] | None = None,
) -> dict[str, list[str]]:
    """`nodes`, `paths` and `marks` (the highlighted edges), as plain sentences."""
    highlight = highlight or Highlight()
    hidden = hidden_for(analysis, disclosure or Disclosure())
    labels = Labels(analysis, hidden)
    nodes = []
    for node in analysis.graph.nodes:
        what = labels.forward(node) or node.name
        kind = {"leaf": "input", "op": node.name, "output": "output"}[node.kind]
        gradient = labels.gradient(node)
        untracked = "" if node.tracked else ", not tracked"
        nodes.append(f"{what} ({kind}{untracked})" + (f"; gradient: {gradient}" if gradient else ""))
    paths = [line for leaf in analysis.paths.values() for path in leaf for line in _path_lines(labels, path)]
    notes = edge_notes or {}
    marks = [_mark(labels, edge, notes, missing=False) for edge in highlight.wrong_edges
             if not labels.counted_once(edge, notes.get(edge, ""))]
    marks += [f"Missing: the {labels.operands(edge)[-1]}'s path through {labels.symbol(edge[0])} → "
              f"{labels.symbol(edge[1])}" for edge in highlight.wrong_edges
              if labels.counted_once(edge, notes.get(edge, ""))]
    marks += [_mark(labels, edge, {}, missing=True) for edge in highlight.missing_edges]
    return {"nodes": nodes, "paths": paths[:MAX_WORDS_PATHS], "marks": marks}


def _path_lines(labels: Labels, path: PathContribution) -> list[str]:
    """`x → mul → add → z (first factor): contributes 3`; the contribution only where the leaf's
    gradient is shown."""
    arrows = " → ".join(path.names)
    leaf = next((node for node in labels.nodes.values() if node.kind == "leaf" and node.name == path.leaf), None)
    shown = leaf is not None and leaf.id not in labels.hidden.grads
    split = next((edge for edge in path.edges if len(labels.operands(edge)) > 1), None)
    operands = labels.operands(split) if split else [""]
    share = labels.share(split, path.contribution) if split else path.contribution
    number = labels.number(share) if shown else ""
    return [f"{arrows}{f' ({operand})' if operand else ''}: "
            + (f"contributes {number}" if number else "its contribution is for you to find") for operand in operands]


def _mark(labels: Labels, edge: Edge, notes: Mapping[Edge, str], *, missing: bool) -> str:
    source, target = (labels.symbol(node) for node in edge)
    slope = labels.slope(edge)
    if missing:
        return f"Missing: the path through {source} → {target}" + (f" ({slope})" if slope else "")
    note = notes.get(edge, "").removeprefix("✗ ").strip()
    return f"Wrong: the edge {source} → {target}" + (f": {note}" if note else "")
