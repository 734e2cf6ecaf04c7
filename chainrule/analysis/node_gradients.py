"""The backward flow of the reference run, as the walkthrough draws it: the
gradient arriving at every node (d output / d node) and the number that
travels back along every edge, measured once per backward call while its
graph is alive.

Autograd floods the graph from the seed; here the same flood is replayed node
by node (one vector-Jacobian product per node, in topological order), so the
message on each edge is kept instead of only the sums autograd leaves in the
leaves' .grad."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from chainrule.analysis.call_inspection import CallEvidence, CallInspector
from chainrule.analysis.graph_build import tensor_value
from chainrule.analysis.node_catalog import NodeCatalog, is_leaf_node, node_shape, output_count, walk_nodes
from chainrule.analysis.node_formulas import node_formulas
from chainrule.analysis.op_recording import BackwardCall, ProgramRun
from chainrule.analysis.path_contributions import hooked, node_vjp, reduce_to_shape
from chainrule.model import FlowMessage
from chainrule.values import Value

MAX_FLOW_NODES = 5_000  # one VJP per node; a larger graph is drawn without its flow
MAX_DRAWN_ELEMENTS = 16  # a longer gradient cannot be read on a node: its shape is drawn instead


@dataclass
class CallFlow:
    """One backward call: gradients by node id, messages by (source, target) edge."""

    call_index: int
    node_grads: dict[str, torch.Tensor] = field(default_factory=dict)
    edge_grads: dict[tuple[str, str], torch.Tensor] = field(default_factory=dict)


def _consumers(root: Any) -> dict[int, int]:
    """How many edges point into each node from nodes that consume its output."""
    counts: dict[int, int] = {}
    for node in walk_nodes(root):
        for child, _ in getattr(node, "next_functions", ()):
            if child is not None:
                counts[id(child)] = counts.get(id(child), 0) + 1
    return counts


def _slot_grads(node: Any, arrived: dict[int, torch.Tensor]) -> list[torch.Tensor]:
    metadata = getattr(node, "_input_metadata", ())
    return [arrived.get(slot, torch.zeros(list(item.shape), dtype=item.dtype)) for slot, item in enumerate(metadata)]


def _added(total: torch.Tensor | None, grad: torch.Tensor) -> torch.Tensor:
    return grad if total is None else total + grad


def call_flow(*, evidence: CallEvidence, catalog: NodeCatalog) -> CallFlow:
    """Replays the backward flood of one call. Raises RuntimeError on a graph too big to replay."""
    call = evidence.call
    flow = CallFlow(call.index)
    root, seed = call.output.grad_fn, call.seed
    if root is None or seed is None:
        return flow
    flow.node_grads[evidence.output_id] = seed.detach().clone()
    waiting = _consumers(root)
    if len(waiting) > MAX_FLOW_NODES:
        raise RuntimeError(f"more than {MAX_FLOW_NODES} nodes")
    slot = call.output.output_nr
    arrived: dict[int, dict[int, torch.Tensor]] = {id(root): {slot: seed.detach()}}
    ready = [root]
    while ready:
        node = ready.pop()
        grads = arrived.pop(id(node), {})
        grads = {output: hooked(node, grad, catalog.gradient_hooks, output) for output, grad in grads.items()}
        for output, grad in grads.items():  # each output of an op with several is a node of its own
            node_id = catalog.node_id(node, output)
            flow.node_grads[node_id] = _added(flow.node_grads.get(node_id), grad)
        if is_leaf_node(node):
            continue
        # what each output passes back, on its own edges: one VJP per output that received a gradient
        if output_count(node) > 1:
            zeros = _slot_grads(node, {})  # made once: a node with many outputs has a VJP per output
            by_output = {output: node_vjp(node, [grad if slot == output else zero for slot, zero in enumerate(zeros)])
                         for output, grad in grads.items()}
        else:
            by_output = {0: node_vjp(node, _slot_grads(node, grads) or [grads.get(0, torch.zeros(()))])}
        for index, (child, child_slot) in enumerate(node.next_functions):
            if child is None:
                continue
            shape = node_shape(child, child_slot)
            total = None
            for output, inputs in by_output.items():
                child_grad = inputs[index] if index < len(inputs) else None
                grad = torch.zeros(shape) if child_grad is None else reduce_to_shape(child_grad.detach(), shape)
                edge = (catalog.node_id(child, child_slot), catalog.node_id(node, output))
                flow.edge_grads[edge] = _added(flow.edge_grads.get(edge), grad)
                total = _added(total, grad)
            slots = arrived.setdefault(id(child), {})
            if total is not None:
                slots[child_slot] = _added(slots.get(child_slot), total)
            waiting[id(child)] -= 1
            if waiting[id(child)] == 0:
                ready.append(child)
    return flow


@dataclass
class FlowRecorder:
    """A backward observer wrapping the CallInspector: after it measured a call,
    the flow and the node formulas are taken while the graph is still alive."""

    inspector: CallInspector
    flows: list[CallFlow] = field(default_factory=list)
    formulas: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __call__(self, run: ProgramRun, calls: list[BackwardCall], proceed: Callable[[], None]) -> None:
        self.inspector(run, calls, proceed)
        catalog = self.inspector.catalog
        if catalog is None or not calls:
            return
        for evidence in self.inspector.evidence[-len(calls):]:
            root = evidence.call.output.grad_fn
            try:
                self.flows.append(call_flow(evidence=evidence, catalog=catalog))
                if root is not None:
                    self.formulas = {**node_formulas(root=root, catalog=catalog), **self.formulas}
            except Exception as error:  # the picture must not fail the analysis
                self.notes.append(f"the backward flow of call {evidence.call.index + 1} is not drawn: {error}")

    def node_grads(self, counted: set[int]) -> dict[str, Value]:
        """Summed over the calls whose gradients are still in some .grad, like the leaves' .grad."""
        return _summed([f.node_grads for f in self.flows if f.call_index in counted])

    def edge_grads(self, counted: set[int]) -> list[FlowMessage]:
        totals = _summed([f.edge_grads for f in self.flows if f.call_index in counted])
        return [FlowMessage(source, target, value) for (source, target), value in totals.items() if value is not None]


def _summed(flows: list[dict[Any, torch.Tensor]]) -> dict[Any, Value]:
    totals: dict[Any, torch.Tensor] = {}
    for flow in flows:
        for key, grad in flow.items():
            previous = totals.get(key)
            totals[key] = grad if previous is None or previous.shape != grad.shape else previous + grad
    # Only what fits on a picture is kept: the analysis is loaded for every answer graded.
    return {key: tensor_value(grad) if grad.numel() <= MAX_DRAWN_ELEMENTS else None for key, grad in totals.items()}
