"""The graph students see: the autograd graph of every backward call, plus
tensors that fed it without being tracked (constants, requires_grad=False
data, detached values) and the edges detach() cut."""

from __future__ import annotations

import re
from typing import Any

import torch

from chainrule.analysis.call_inspection import CallEvidence
from chainrule.analysis.node_catalog import MAX_KEPT_ELEMENTS, NodeCatalog, is_leaf_node, walk_nodes
from chainrule.analysis.op_recording import ForwardOp
from chainrule.analysis.tensors import tensor_to_value
from chainrule.model import Graph, GraphEdge, GraphNode
from chainrule.values import Value, is_finite_value


def tensor_value(tensor: torch.Tensor | None) -> Value:
    """JSON-safe forward value; None when unknown, huge or not finite."""
    if tensor is None or tensor.numel() > MAX_KEPT_ELEMENTS or tensor.is_complex():
        return None
    value = tensor_to_value(tensor)
    return value if is_finite_value(value) else None


class GraphBuilder:
    def __init__(self, catalog: NodeCatalog, evidence: list[CallEvidence]) -> None:
        self.catalog = catalog
        self.evidence = evidence
        self.nodes: dict[str, GraphNode] = {}
        self.edges: dict[tuple[str, str], GraphEdge] = {}
        self.leaf_values = {name: v for item in evidence for name, v in item.leaf_values.items()}

    def build(self) -> Graph:
        for item in self.evidence:
            root = item.call.output.grad_fn
            if root is None:
                continue
            self._add_subgraph(root, item.call.output.output_nr)
            self._add_output(item, root)
        self._add_untracked_inputs()
        self._add_detach_cuts()
        return Graph(nodes=sorted(self.nodes.values(), key=_node_order), edges=list(self.edges.values()))

    def _add_edge(self, source: str, target: str, *, cut: bool = False) -> None:
        self.edges.setdefault((source, target), GraphEdge(source, target, cut))

    def _add_subgraph(self, root: Any, root_output: int = 0) -> None:
        """Every node below `root`, one per output the graph reads: the outputs of an op with several
        (a, b = x.chunk(2)) are nodes of their own, each with its value and an edge from each input."""
        nodes = walk_nodes(root)
        read: dict[int, set[int]] = {id(root): {root_output}}
        for node in nodes:
            for child, output in getattr(node, "next_functions", ()):
                if child is not None:
                    read.setdefault(id(child), set()).add(output)
        for node in nodes:
            for output in sorted(read.get(id(node), {0})):
                node_id = self.catalog.node_id(node, output)
                self.nodes.setdefault(node_id, self._describe(node, node_id, output))
                for child, child_output in getattr(node, "next_functions", ()):
                    if child is not None:
                        self._add_edge(self.catalog.node_id(child, child_output), node_id)

    def _describe(self, node: Any, node_id: str, output: int = 0) -> GraphNode:
        name = self.catalog.node_name(node)
        if is_leaf_node(node):
            value = self.leaf_values.get(name, node.variable)
            return GraphNode(node_id, "leaf", name, tensor_value(value), list(node.variable.shape))
        return GraphNode(
            node_id,
            "op",
            name,
            tensor_value(self.catalog.forward_value(node, output)),
            self.catalog.output_shapes(node)[output],
            tensor_name=self.catalog.output_tensor_name(node, output),
        )

    def _add_output(self, item: CallEvidence, root: Any) -> None:
        output = item.call.output
        self.nodes.setdefault(
            item.output_id,
            GraphNode(item.output_id, "output", item.output_name, tensor_value(output), list(output.shape)),
        )
        self._add_edge(self.catalog.node_id(root, output.output_nr), item.output_id)

    def _add_untracked_inputs(self) -> None:
        for op in self.catalog.run.ops:
            if op.grad_fn is None:
                continue
            targets = [node_id for node_id in self.catalog.node_ids(op.grad_fn) if node_id in self.nodes]
            for position, tensor in enumerate(op.inputs if targets else ()):
                if not tensor.requires_grad:
                    node_id = self._untracked_node(op, position, tensor)
                    for target in targets:
                        self._add_edge(node_id, target)

    def _untracked_node(self, op: ForwardOp, position: int, tensor: torch.Tensor) -> str:
        detached = self._detach_op_of(tensor)
        name = self.catalog.tensor_name(tensor)
        if detached is not None:
            node_id = f"op{detached.seq}"  # the id the detach node has in the identity re-run
        else:
            node_id = f"const:{name}" if name else f"const:{op.seq}.{position}"
        self.nodes.setdefault(
            node_id,
            GraphNode(node_id, "leaf", name or ("detached" if detached else "constant"), tensor_value(tensor),
                      list(tensor.shape), tracked=False),
        )
        return node_id

    def _detach_op_of(self, tensor: torch.Tensor) -> ForwardOp | None:
        return next((op for op in self.catalog.run.ops if op.is_detach and op.output is tensor), None)

    def _add_detach_cuts(self) -> None:
        for op in self.catalog.run.ops:
            target = f"op{op.seq}"
            if not op.is_detach or target not in self.nodes or not op.inputs:
                continue
            source = op.inputs[0]
            if source.grad_fn is not None:
                self._add_subgraph(source.grad_fn, source.output_nr)
                self._add_edge(self.catalog.node_id(source.grad_fn, source.output_nr), target, cut=True)
            elif source.requires_grad:
                name = self.catalog.leaf_name(source)
                leaf = GraphNode(f"leaf:{name}", "leaf", name, tensor_value(source), list(source.shape))
                self.nodes.setdefault(leaf.id, leaf)
                self._add_edge(leaf.id, target, cut=True)


def _node_order(node: GraphNode) -> tuple[int, list[str | int]]:
    rank = {"leaf": 0, "op": 1, "output": 2}[node.kind]
    # Natural order, so op10 comes after op9 and the DOT text is stable.
    parts = re.split(r"(\d+)", node.id)
    return rank, [int(part) if part.isdigit() else part for part in parts]
