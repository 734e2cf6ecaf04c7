"""The Analysis document: everything the grader needs about one reference
program, as plain JSON-safe data. It is computed once per variant (with torch,
in the sandbox) and then diagnoses answers without torch."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from chainrule.values import Shape, Value, numbers_array, value_changes, with_changes

# 2: a hypothesis's value may be stored as its changes to the part's reference value ("changes"
# instead of "value"). 3: a path contribution keeps its edges, not every route (a wide layer has
# thousands of routes reading alike). Documents of versions 1 and 2 are still read.
SCHEMA_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)

Edge = tuple[str, str]


@dataclass(frozen=True)
class GraphNode:
    id: str
    kind: str  # "leaf" | "op" | "output"
    name: str  # leaf or output variable name, or the op's torch name
    value: Value  # forward value; None when unknown or too large to keep
    shape: Shape
    tracked: bool = True  # False for tensors with requires_grad=False
    tensor_name: str | None = None  # variable holding an op's output, e.g. "a"


@dataclass(frozen=True)
class GraphEdge:
    source: str  # forward direction: input → operation
    target: str
    cut: bool = False  # a detach(): the value flows, the gradient does not


@dataclass
class Graph:
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)

    def node(self, node_id: str) -> GraphNode | None:
        return next((node for node in self.nodes if node.id == node_id), None)

    def nodes_by_id(self) -> dict[str, GraphNode]:
        """For many look-ups at once (node() reads the list each time)."""
        return {node.id: node for node in self.nodes}

    @property
    def untracked(self) -> list[str]:
        return [node.id for node in self.nodes if not node.tracked]

    @property
    def cut_edges(self) -> list[Edge]:
        return [(edge.source, edge.target) for edge in self.edges if edge.cut]


@dataclass
class PathContribution:
    leaf: str
    names: list[str]  # SPEC §5 notation: leaf, ops…, output
    contribution: Value  # shaped like the leaf
    edges: list[Edge]  # (source, target) node ids of every route with these names, each edge once

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PathContribution:
        """Documents before version 3 list each route's node ids instead of the edges."""
        edges = data["edges"] if "edges" in data else route_edges(data["routes"])
        return cls(data["leaf"], list(data["names"]), data["contribution"], [(a, b) for a, b in edges])


def route_edges(routes: list[list[str]]) -> list[Edge]:
    edges: dict[Edge, None] = {}
    for route in routes:
        for edge in zip(route, route[1:], strict=False):
            edges.setdefault(edge)
    return list(edges)


@dataclass
class Highlight:
    wrong_edges: list[Edge] = field(default_factory=list)
    missing_edges: list[Edge] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Highlight:
        return cls(
            wrong_edges=[(a, b) for a, b in data.get("wrong_edges", [])],
            missing_edges=[(a, b) for a, b in data.get("missing_edges", [])],
            nodes=list(data.get("nodes", [])),
        )

    def to_json(self) -> dict[str, Any]:
        return {"wrong_edges": [list(edge) for edge in self.wrong_edges],
                "missing_edges": [list(edge) for edge in self.missing_edges], "nodes": list(self.nodes)}

    @classmethod
    def merged(cls, highlights: Iterable[Highlight]) -> Highlight:
        """Everything any of them highlights, e.g. the wrong paths of several parts in one picture."""
        total = cls()
        for item in highlights:
            total.wrong_edges.extend(item.wrong_edges)
            total.missing_edges.extend(item.missing_edges)
            total.nodes.extend(item.nodes)
        return total


@dataclass
class Hypothesis:
    kind: str
    value: Value  # the answer this mistake produces
    paths: list[list[str]]
    highlight: Highlight
    detail: dict[str, Any]  # JSON-safe facts the feedback text is built from
    any_number: bool = False  # matches every number (a None part answered with one)
    # `value` as an array of floats, kept by the analysis that built it (never stored): comparing and
    # storing thousands of large predictions need not read their nested lists again
    array: np.ndarray | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any], reference: np.ndarray | None = None) -> Hypothesis:
        """`reference`: the part's reference value (`numbers_array`), which a value stored as "changes" is
        read against."""
        return cls(
            kind=data["kind"],
            value=data["value"] if "changes" not in data else with_changes(reference, data["changes"]),
            paths=[list(path) for path in data["paths"]],
            highlight=Highlight.from_json(data["highlight"]),
            detail=dict(data["detail"]),
            any_number=bool(data.get("any_number", False)),
        )

    def to_json(self, reference: np.ndarray | None = None) -> dict[str, Any]:
        """Against `reference` (the part's reference value, `numbers_array`), a large value that differs in
        few entries is stored as those entries."""
        data: dict[str, Any] = {"kind": self.kind}
        changes = value_changes(self.value if self.array is None else self.array, reference) \
            if not self.any_number else None
        if changes is None:
            data["value"] = _lists_not_tuples(self.value)
        else:
            data["changes"] = changes
        data.update(paths=[list(path) for path in self.paths], highlight=self.highlight.to_json(),
                    detail=_lists_not_tuples(self.detail), any_number=self.any_number)
        return data


@dataclass
class PartReference:
    key: str  # "x.grad" or "x"
    value: Value
    shape: Shape | None
    tensor: str  # the namespace name the part reads, e.g. "x"
    reads_grad: bool
    requires_grad: bool | None  # None when the variable is not a tensor
    is_leaf: bool | None


@dataclass
class BackwardRecord:
    output: str
    output_node: str
    output_shape: Shape
    seed: Value
    seed_given: bool


@dataclass(frozen=True)
class FlowMessage:
    """The gradient that travels back along one edge (source → target, forward
    direction) in the reference run: what the target sends to its input."""

    source: str
    target: str
    value: Value


@dataclass
class Analysis:
    parts: dict[str, PartReference]
    graph: Graph
    backward_calls: list[BackwardRecord]
    paths: dict[str, list[PathContribution]]  # by leaf name
    hypotheses: dict[str, list[Hypothesis]]  # by part key
    notes: list[str] = field(default_factory=list)
    # For the picture (absent from analyses cached before it, hence the defaults):
    node_grads: dict[str, Value] = field(default_factory=dict)  # d output / d node, by node id
    edge_grads: list[FlowMessage] = field(default_factory=list)
    node_formulas: dict[str, str] = field(default_factory=dict)  # op node id → "x·y", "x³", "4·x"
    # The right local derivative of every edge where it is a factor:
    # {"source": node id, "target": node id, "formula": "y", "value": 3.0}
    local_derivatives: list[dict[str, Any]] = field(default_factory=list)
    # What the program does with autograd, line by line (chainrule.analysis.trace_summary): code parts
    # compare the student's program with it (chainrule.answers.code_comparison). Empty when cached before.
    program_trace: dict[str, Any] = field(default_factory=dict)
    # Built on first use by chainrule.diagnosis.numeric (part → index); never serialised.
    match_indexes: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        data = _lists_not_tuples(asdict(replace(self, hypotheses={}, match_indexes={})))
        data.pop("match_indexes", None)
        data["hypotheses"] = {}
        for part, items in self.hypotheses.items():
            reference = numbers_array(self.parts[part].value) if part in self.parts else None
            data["hypotheses"][part] = [item.to_json(reference) for item in items]
        data["version"] = SCHEMA_VERSION
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Analysis:
        if data.get("version") not in READABLE_VERSIONS:
            raise ValueError(f"unsupported analysis version {data.get('version')!r}")
        parts = {key: PartReference(**part) for key, part in data["parts"].items()}
        return cls(
            parts=parts,
            graph=Graph(
                nodes=[GraphNode(**node) for node in data["graph"]["nodes"]],
                edges=[GraphEdge(**edge) for edge in data["graph"]["edges"]],
            ),
            backward_calls=[BackwardRecord(**call) for call in data["backward_calls"]],
            paths={
                leaf: [PathContribution.from_json(path) for path in paths]
                for leaf, paths in data["paths"].items()
            },
            hypotheses=_hypotheses_from_json(data["hypotheses"], parts),
            notes=list(data.get("notes", [])),
            node_grads=dict(data.get("node_grads") or {}),
            edge_grads=[FlowMessage(**item) for item in data.get("edge_grads") or []],
            node_formulas=dict(data.get("node_formulas") or {}),
            local_derivatives=[dict(item) for item in data.get("local_derivatives") or []],
            program_trace=dict(data.get("program_trace") or {}),
        )


# A stored prediction may be a few changes to its part's reference value, so a small document can
# describe many whole values: reading one that would expand to more numbers than this is refused
# (the 781-node MLP of bench/mutation_bench.py expands to about 3.5 million).
MAX_EXPANDED_NUMBERS = 20_000_000


def _hypotheses_from_json(stored: dict[str, Any], parts: dict[str, PartReference]) -> dict[str, list[Hypothesis]]:
    references = {part: numbers_array(parts[part].value) if part in parts else None for part in stored}
    expanded = 0
    for part, items in stored.items():
        reference = references[part]
        changed = sum(1 for item in items if isinstance(item, dict) and "changes" in item)
        expanded += changed * (reference.size if reference is not None else 0)
        if expanded > MAX_EXPANDED_NUMBERS:
            raise ValueError(f"the analysis document expands to more than {MAX_EXPANDED_NUMBERS:,} numbers")
    return {part: [Hypothesis.from_json(item, references[part]) for item in items] for part, items in stored.items()}


def _lists_not_tuples(data: Any) -> Any:
    """Edges are tuples in memory; JSON has only lists, and a document that
    already looks like its own JSON round trip compares equal to it."""
    if isinstance(data, dict):
        return {key: _lists_not_tuples(item) for key, item in data.items()}
    if isinstance(data, (list, tuple)):
        return [_lists_not_tuples(item) for item in data]
    return data
