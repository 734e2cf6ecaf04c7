"""A whole backward pass by hand, node by node in topological order, so one
node's vector-Jacobian product can be replaced and the effect on every leaf
measured. Backward is linear in the gradient, so a mutation's effect is the
difference at the mutated node's inputs carried down to the leaves.

Carrying each mutation's difference through the whole graph below it made the analysis grow with the
square of the graph (every node has its mutations, and each walked the nodes below it). A node whose
output is small keeps its *response* instead: what one unit of gradient arriving at each entry of its
output gives every leaf below (a matrix per leaf, built bottom-up from its children's responses). A
difference carried down stops at the first node with a response and is multiplied by it, so each
mutation walks only the few large nodes between it and the nodes below it that keep one. A
difference is handed from node to node in topological order through a queue of the nodes it has
reached, so a walk costs what it visits, not the length of the graph."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.autograd.function import BackwardCFunction

from chainrule.analysis.node_catalog import is_leaf_node, node_shape, output_count
from chainrule.analysis.path_contributions import Hooks, has_hooks, hooked, no_hooks, node_vjp, reduce_to_shape

LeafName = Callable[[Any, int], str | None]  # (node, output) → a leaf's name, a retained non-leaf's name, else None
InputGrads = tuple[torch.Tensor | None, ...]
Response = list[dict[str, torch.Tensor]]  # per output slot: leaf name → (entries of the slot, *the leaf's shape)
RESPONSE_ENTRIES = 1 << 15  # the most numbers one node's response may hold (output entries × leaf entries)
SHARED_RESPONSE_ENTRIES = 1 << 17  # and a node that several nodes pass gradient to (a layer every neuron reads)
RESPONSE_TOTAL = 1 << 23  # and all responses of one backward call together (32 MB in float32)


@dataclass
class Flood:
    """The reference backward pass of one call: what reaches every node."""

    order: list[Any]  # topological: every node after all nodes that feed it gradient
    position: dict[int, int] = field(default_factory=dict)  # id(node) → its index in `order`
    incoming: dict[int, list[torch.Tensor]] = field(default_factory=dict)  # id(node) → grad per output slot
    outgoing: dict[int, InputGrads] = field(default_factory=dict)  # id(node) → grad per input
    leaves: dict[str, torch.Tensor] = field(default_factory=dict)
    hooks: Hooks = no_hooks
    responses: dict[int, Response] = field(default_factory=dict)  # id(node) → its response, where it keeps one
    root_slot: int = 0  # the output of the root the seed enters (m of s, m = torch.std_mean(x); m.backward())


def topological_order(root: Any) -> list[Any]:
    parents: dict[int, int] = {}
    nodes: dict[int, Any] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in nodes:
            continue
        nodes[id(node)] = node
        for child, _ in getattr(node, "next_functions", ()):
            if child is not None:
                parents[id(child)] = parents.get(id(child), 0) + 1
                stack.append(child)
    order, ready = [], [root]
    while ready:
        node = ready.pop()
        order.append(node)
        for child, _ in getattr(node, "next_functions", ()):
            if child is None:
                continue
            parents[id(child)] -= 1
            if parents[id(child)] == 0:
                ready.append(child)
    return order


def _slot_grads(node: Any, by_slot: dict[int, torch.Tensor]) -> list[torch.Tensor]:
    metadata = getattr(node, "_input_metadata", ())
    if not metadata:
        return [by_slot.get(0, torch.zeros(()))]
    return [by_slot[i] if i in by_slot else torch.zeros(list(item.shape), dtype=item.dtype)
            for i, item in enumerate(metadata)]


Transform = Callable[[Any, list[torch.Tensor], InputGrads], InputGrads]


class _Pending:
    """Gradients on their way down (id(node) → slot → grad), handed out node by node in topological
    order: a node is taken only once everything above it that sends it something has been taken."""

    def __init__(self, record: Flood) -> None:
        self.order, self.position = record.order, record.position
        self.grads: dict[int, dict[int, torch.Tensor]] = {}
        self.queue: list[int] = []  # positions in `order` of the nodes in `grads`

    def add(self, node: Any, slot: int, grad: torch.Tensor) -> None:
        slots = self.grads.get(id(node))
        if slots is None:
            slots = self.grads[id(node)] = {}
            heapq.heappush(self.queue, self.position[id(node)])
        slots[slot] = slots[slot] + grad if slot in slots else grad

    def take(self) -> tuple[Any, dict[int, torch.Tensor]] | None:
        if not self.queue:
            return None
        node = self.order[heapq.heappop(self.queue)]
        return node, self.grads.pop(id(node))


def _propagate(
    pending: _Pending, leaf_name: LeafName, record: Flood | None, transform: Transform | None = None,
    hooks: Hooks = no_hooks, responses: dict[int, Response] | None = None,
) -> dict[str, torch.Tensor]:
    """Carry the gradients in `pending` down the graph; a node with a response in `responses` passes
    what arrives straight to the leaves."""
    leaves: dict[str, torch.Tensor] = {}
    while (taken := pending.take()) is not None:
        node, by_slot = taken
        response = responses.get(id(node)) if responses else None
        if response is not None:
            for slot, grad in by_slot.items():
                flat = grad.reshape(-1)
                for reached, matrix in response[slot].items():
                    part = torch.tensordot(flat.to(matrix.dtype), matrix, dims=1)
                    leaves[reached] = leaves[reached] + part if reached in leaves else part
            continue
        if is_leaf_node(node):
            name = leaf_name(node, 0)
            assert name is not None  # every leaf has a name
            grad = hooked(node, reduce_to_shape(by_slot.get(0, torch.zeros(())), list(node.variable.shape)), hooks)
            leaves[name] = leaves[name] + grad if name in leaves else grad
            continue
        grads = _slot_grads(node, {slot: hooked(node, grad, hooks, slot) for slot, grad in by_slot.items()})
        for slot in by_slot:
            kept = leaf_name(node, slot)  # a tensor kept with retain_grad(): its .grad is what arrives here
            if kept is not None:
                leaves[kept] = leaves[kept] + grads[slot] if kept in leaves else grads[slot]
        inputs = _reduced(node, node_vjp(node, grads))
        if transform is not None:
            inputs = transform(node, grads, inputs)
        if record is not None:
            record.incoming[id(node)] = grads
            record.outgoing[id(node)] = inputs
        _pass_on(node, inputs, pending)
    return leaves


def _reduced(node: Any, inputs: InputGrads) -> InputGrads:
    """Each input's gradient with that input's shape (a broadcast bias gets the sum over rows)."""
    return tuple(
        grad if child is None or grad is None else reduce_to_shape(grad, node_shape(child, child_slot))
        for (child, child_slot), grad in zip(node.next_functions, inputs, strict=False)
    )


def _pass_on(node: Any, inputs: InputGrads, pending: _Pending) -> None:
    for (child, child_slot), grad in zip(node.next_functions, inputs, strict=False):
        if child is not None and grad is not None:
            pending.add(child, child_slot, reduce_to_shape(grad, node_shape(child, child_slot)))


def _seeded(record: Flood, root: Any, seed: torch.Tensor) -> _Pending:
    pending = _Pending(record)
    pending.add(root, record.root_slot, seed)
    return pending


def flood(root: Any, seed: torch.Tensor, leaf_name: LeafName, hooks: Hooks = no_hooks, root_slot: int = 0) -> Flood:
    order = topological_order(root)
    record = Flood(order=order, position={id(node): index for index, node in enumerate(order)}, hooks=hooks,
                   root_slot=root_slot)
    with torch.no_grad():
        record.leaves = _propagate(_seeded(record, root, seed), leaf_name, record, hooks=hooks)
    return record


def leaf_deltas(record: Flood, node: Any, wrong: InputGrads, leaf_name: LeafName) -> dict[str, torch.Tensor]:
    """What each leaf's gradient changes by when `node` passes `wrong` to its
    inputs instead of what it really passes."""
    right = record.outgoing.get(id(node))
    if right is None:
        return {}
    pending = _Pending(record)
    for (child, child_slot), used, real in zip(node.next_functions, wrong, right, strict=False):
        if child is None or used is None or used is real or (real is not None and real.numel() != used.numel()):
            continue  # `used is real`: a mutation passes the other inputs what they really get
        delta = used - real.reshape(used.shape) if real is not None else used
        if not bool(delta.any()):
            continue  # this input gets what it really gets
        pending.add(child, child_slot, reduce_to_shape(delta, node_shape(child, child_slot)))
    with torch.no_grad():
        return _propagate(pending, leaf_name, None, hooks=record.hooks, responses=record.responses)


def unit_below(record: Flood, node: Any, slot: int, leaf_name: LeafName) -> dict[str, torch.Tensor]:
    """What each leaf below gets from one unit of gradient at every entry of `node`'s output `slot`:
    d(that output)/d(leaf), for a scalar output."""
    metadata = getattr(node, "_input_metadata", ())
    dtype = node.variable.dtype if is_leaf_node(node) else metadata[slot].dtype if slot < len(metadata) else None
    pending = _Pending(record)
    pending.add(node, slot, torch.ones(node_shape(node, slot), dtype=dtype))
    with torch.no_grad():
        return _propagate(pending, leaf_name, None, hooks=record.hooks, responses=record.responses)


def keep_responses(record: Flood, leaf_name: LeafName) -> None:
    """Give every node whose output is small its response (see the module's docstring), from the
    leaves up, each built from the responses below it. Not with the program's own gradient hooks
    or Python autograd Functions in the graph (their backward need not be linear in the gradient)."""
    if any(has_hooks(node, record.hooks) or isinstance(node, BackwardCFunction) for node in record.order):
        return
    reached: dict[int, dict[str, int]] = {}  # id(node) → entries of each leaf its gradient reaches
    senders: dict[int, int] = {}  # id(node) → how many nodes pass it gradient
    for node in record.order:
        for child, _ in getattr(node, "next_functions", ()):
            if child is not None:
                senders[id(child)] = senders.get(id(child), 0) + 1
    total = 0
    with torch.no_grad():
        for node in reversed(record.order):
            owns = [leaf_name(node, output) for output in range(output_count(node))]
            found = {own: record.leaves[own].numel() for own in owns if own in record.leaves}
            for child, _ in getattr(node, "next_functions", ()):
                if child is not None:
                    found.update(reached.get(id(child), {}))
            reached[id(node)] = found
            grads = record.incoming.get(id(node))
            if is_leaf_node(node) or grads is None or id(node) not in record.outgoing:
                continue
            entries = sum(grad.numel() for grad in grads) * sum(found.values())
            # building a response walks once per output entry; it pays off for the mutations above that
            # pass through the node, many more when several nodes send it gradient
            most = SHARED_RESPONSE_ENTRIES if senders.get(id(node), 0) > 1 else RESPONSE_ENTRIES
            if entries > most or total + entries > RESPONSE_TOTAL:
                continue
            response = _response(record, node, grads, leaf_name)
            if all(bool(torch.isfinite(matrix).all()) for slot in response for matrix in slot.values()):
                record.responses[id(node)] = response  # (an inf in it would make 0 · inf = NaN of nothing)
                total += entries


def _response(record: Flood, node: Any, grads: list[torch.Tensor], leaf_name: LeafName) -> Response:
    response: Response = []
    for slot, grad in enumerate(grads):
        rows: list[dict[str, torch.Tensor]] = []
        names: set[str] = set()  # every leaf the slot reaches, also with 0 only
        for entry in range(grad.numel()):
            unit = torch.zeros(grad.numel(), dtype=grad.dtype)
            unit[entry] = 1
            arriving = [unit.reshape(grad.shape) if index == slot else torch.zeros_like(other)
                        for index, other in enumerate(grads)]
            row: dict[str, torch.Tensor] = {}
            kept = leaf_name(node, slot)
            if kept is not None:
                row[kept] = arriving[slot]
            pending = _Pending(record)
            for (child, child_slot), given in zip(node.next_functions, _reduced(node, node_vjp(node, arriving)),
                                                  strict=False):
                if child is None or given is None:
                    continue
                if id(child) in record.responses and not bool(given.any()):
                    # a unit at one entry of a stack reaches one of its inputs; the others' responses give
                    # their leaves 0 (kept as 0, so that an inf arriving later makes the NaN walking makes)
                    names.update(record.responses[id(child)][child_slot])
                    continue
                pending.add(child, child_slot, reduce_to_shape(given, node_shape(child, child_slot)))
            for name, value in _propagate(pending, leaf_name, None, responses=record.responses).items():
                row[name] = row[name] + value if name in row else value
            rows.append(row)
            names.update(row)
        response.append({name: torch.stack([row[name] if name in row else torch.zeros_like(record.leaves[name])
                                            for row in rows]) for name in names})
    return response


def flood_with(record: Flood, root: Any, seed: torch.Tensor, leaf_name: LeafName,
               transform: Transform) -> dict[str, torch.Tensor]:
    """The leaves' gradients when `transform` may replace what any node passes on."""
    with torch.no_grad():
        return _propagate(_seeded(record, root, seed), leaf_name, None, transform, record.hooks)
