"""Chain-rule paths and what each contributes to a leaf's gradient (or a retained non-leaf's).

Autograd floods the whole graph at once; here each node's backward is called
(a vector-Jacobian product seeded like the real backward call) for the routes
that reach it reading the same names, so every path (leaf → … → output, by
names) gets its own contribution, and each of its routes too while they are
few. The contributions of all paths of a leaf add up to what the engine put in
its .grad."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.autograd.function import BackwardCFunction

from chainrule.analysis.node_catalog import NodeCatalog, is_leaf_node, node_shape, output_count, walk_nodes
from chainrule.model import Edge, route_edges

VectorJacobian = Callable[[Any, list[torch.Tensor]], tuple[torch.Tensor | None, ...]]
Hooks = Callable[[Any, int], list[Any]]  # (node, output) → the program's hooks on the gradient arriving there


def no_hooks(node: Any, output: int = 0) -> list[Any]:
    return []


def has_hooks(node: Any, hooks: Hooks) -> bool:
    """Whether the program hooked the gradient arriving at any output of this node."""
    return any(hooks(node, output) for output in range(output_count(node)))


def hooked(node: Any, grad: torch.Tensor, hooks: Hooks, output: int = 0) -> torch.Tensor:
    """The gradient arriving at `node`'s output `output` after the program's tensor hooks (a gradient
    reversal's g ↦ -λg), as autograd applies them; a hook is linear in practice, so it may be applied to
    routes arriving together, or to one route alone."""
    for hook in hooks(node, output):
        changed = hook(grad)
        grad = changed if isinstance(changed, torch.Tensor) else grad
    return grad


MAX_NODE_CALLS = 20_000  # node calls per backward call: guards against graphs with exponentially many names
MAX_LISTED_ROUTES = 32  # a path's routes are listed and measured one by one up to this many


@dataclass
class MergedPath:
    """Every route from a leaf to the output that reads the same names, and what they contribute
    together. Routes with the same names are one path to a student (x*x has two edges into mul,
    both `x → mul`; a wide layer has one route per unit, all `W1 → select → mul → …`).

    `routes` and `route_grads` list each route (its node ids, leaf → output) and its own
    contribution while there are at most MAX_LISTED_ROUTES; past that both are empty and only the
    path's total, its edges and `route_count` are kept."""

    leaf: str  # or a non-leaf tensor kept with retain_grad(): its routes start at the node that made it
    names: list[str]  # leaf, ops…, output
    grad: torch.Tensor
    routes: list[list[str]]
    route_grads: list[torch.Tensor] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)  # (source, target) node ids, forward, each once
    route_count: int = 0
    leaf_id: str = ""  # node id of the leaf end of its first route

    @property
    def listed(self) -> bool:
        """Every route is in `routes`."""
        return len(self.routes) == self.route_count


@dataclass
class PathSearch:
    paths: list[MergedPath] = field(default_factory=list)  # in the order depth-first backward meets them
    capped_leaves: set[str] = field(default_factory=set)
    exhausted: bool = False


def node_vjp(node: Any, output_grads: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
    with torch.no_grad():
        if isinstance(node, BackwardCFunction):  # a Python autograd.Function
            result = node.apply(*output_grads)
        else:
            result = node(*output_grads)
    return result if isinstance(result, tuple) else (result,)


def reduce_to_shape(grad: torch.Tensor, shape: list[int]) -> torch.Tensor:
    """Calling a node directly skips the engine's reduction of broadcast
    gradients (a bias added to every row), so do it here."""
    if list(grad.shape) == shape:
        return grad
    try:
        return grad.sum_to_size(shape)
    except RuntimeError:
        return grad.reshape(shape)


def _output_grads(node: Any, slot: int, grad: torch.Tensor) -> list[torch.Tensor]:
    metadata = getattr(node, "_input_metadata", ())
    grads = [torch.zeros(list(item.shape), dtype=item.dtype) for item in metadata] or [grad]
    grads[slot] = grad
    return grads


def _input_grads(node: Any, inputs: tuple[torch.Tensor | None, ...]) -> list[tuple[int, Any, int, torch.Tensor]]:
    """(index, child, child's output slot, gradient) for every input of `node` that requires grad."""
    steps = []
    for index, ((child, child_slot), child_grad) in enumerate(zip(node.next_functions, inputs, strict=False)):
        if child is None:
            continue  # an input that does not require grad: a constant to autograd
        shape = node_shape(child, child_slot)
        steps.append((index, child, child_slot,
                      torch.zeros(shape) if child_grad is None else reduce_to_shape(child_grad, shape)))
    return steps


@dataclass(eq=False)
class _State:
    """One node reached by routes whose names so far (output → … → this node) are the same: their
    gradients arriving here add up, and one call of the node's backward carries them all on."""

    node: Any
    node_id: str
    slot: int  # which of the node's outputs the gradient arrives at
    names: tuple[str, ...]  # output → … → this node
    first: tuple[int, ...]  # the first route here in depth-first order: the input index taken at each step
    grad: torch.Tensor
    count: int = 0  # routes here (x*x's two inputs are two)
    order: int = 0  # when its node's backward was called: after every state that leads here
    parents: dict[int, _State | None] = field(default_factory=dict)  # by id(); None: the output
    steps: list[tuple[int, _State]] = field(default_factory=list)  # (input index, child state), in input order


Route = list[tuple[int, _State]]  # (input index taken into it, state), from the output down


def find_paths(
    *,
    root: Any,
    seed: torch.Tensor,
    catalog: NodeCatalog,
    output_id: str,
    output_name: str,
    max_paths: int,
    vjp: VectorJacobian = node_vjp,
    root_output: int = 0,
) -> PathSearch:
    """Every path from a leaf (or a tensor kept with retain_grad()) to the output and what it
    contributes, in the order a depth-first walk of the routes meets them.

    Routes are not walked one by one: a wide layer has as many routes as the product of its
    widths, all reading the same names. Routes that reach a node with the same names so far are
    carried on together (one backward call of the node for all of them), so the cost grows with
    the nodes and the distinct names, not with the routes. Only a path with few routes has them
    listed, each with its own contribution. At most `max_paths` paths per leaf are kept: the first
    ones depth-first, as a student would read them off the graph."""
    search = PathSearch()
    for node in walk_nodes(root):  # nodes the program did not record are numbered depth-first
        catalog.node_id(node)
    order = _parents_first(root)
    start = _State(root, catalog.node_id(root, root_output), root_output, (output_name, catalog.node_name(root)), (),
                   seed, count=1)
    carried = _carry(order, start, catalog, vjp, max_paths=max_paths)
    search.capped_leaves = _names_below(carried.capped_nodes, catalog)
    kept: list[tuple[str, tuple[str, ...]]] = []
    kept_ends: dict[str, int] = {}
    for leaf, names in sorted(carried.ends, key=lambda key: min(state.first for state in carried.ends[key])):
        if kept_ends.get(leaf, 0) >= max_paths:
            search.capped_leaves.add(leaf)
            continue
        kept_ends[leaf] = kept_ends.get(leaf, 0) + 1
        kept.append((leaf, names))
    search.exhausted = carried.exhausted
    if carried.capped_nodes or carried.exhausted:
        # The states left behind at a capped node lead to no kept path of their own, but some of their routes
        # may read like a kept one: z ← add ← N reads on below N as z ← add ← mul ← N does one node further
        # up. And past MAX_NODE_CALLS only the names were carried on. Carry the kept paths again, all their
        # routes and no other (every beginning of a kept path's names is read by a state above its end).
        wanted = {state.names for state in _ancestors([state for key in kept for state in carried.ends[key]]).values()}
        start = _State(root, start.node_id, start.slot, start.names, (), seed, count=1)
        carried = _carry(order, start, catalog, vjp, wanted=wanted)
        search.exhausted = carried.exhausted
    budget = [MAX_NODE_CALLS]
    for leaf, names in kept:
        reached = carried.ends.get((leaf, names))
        if reached:
            search.paths.append(_path(leaf, list(names), reached, start, seed, output_id, catalog, budget, vjp))
    return search


@dataclass
class _Carried:
    ends: dict[tuple[str, tuple[str, ...]], list[_State]]  # (leaf, its path's names) → the states reaching it
    capped_nodes: list[Any]
    exhausted: bool


def _carry(
    order: list[Any], start: _State, catalog: NodeCatalog, vjp: VectorJacobian, *,
    max_paths: int | None = None, wanted: set[tuple[str, ...]] | None = None,
) -> _Carried:
    """Carries the gradient down from `start`, node by node in `order` (parents first), one backward call
    per state. With `max_paths`, a node reached reading more than that many ways keeps the states of the
    first ones, and past MAX_NODE_CALLS the names go on without gradients; with `wanted`, only states
    whose names so far are in it are carried, and it stops at MAX_NODE_CALLS."""
    start.parents[0] = None
    states: dict[int, dict[tuple[int, tuple[str, ...]], _State]] = {id(start.node): {(start.slot, start.names): start}}
    carried = _Carried({}, [], False)
    calls, turns = 0, itertools.count()
    for node in order:
        here = sorted(states.pop(id(node), {}).values(), key=lambda state: state.first)
        ways = list(dict.fromkeys(state.names for state in here))  # two outputs of a node may be reached alike
        if max_paths is not None and len(ways) > max_paths:  # each way reads differently to every leaf below
            carried.capped_nodes.append(node)
            first_ways = set(ways[:max_paths])
            here = [state for state in here if state.names in first_ways]
        for state in here:
            state.order = next(turns)
            state.grad = hooked(node, state.grad, catalog.gradient_hooks, state.slot)
            if is_leaf_node(node):
                state.grad = reduce_to_shape(state.grad, node_shape(node))
                carried.ends.setdefault((state.names[-1], state.names[::-1]), []).append(state)
                continue
            kept = catalog.read_name(node, state.slot)
            if kept is not None:  # retain_grad(): the routes so far end at this tensor too, and go on
                carried.ends.setdefault((kept, (kept, *state.names[-2::-1])), []).append(state)
            if calls < MAX_NODE_CALLS:
                calls += 1
                inputs = vjp(node, _output_grads(node, state.slot, state.grad))
            elif wanted is not None:  # the kept paths alone are too many to carry
                carried.exhausted = True
                return carried
            else:  # the names are still read on down to the leaves, to find the paths to keep
                carried.exhausted = True
                inputs = (None,) * len(node.next_functions)
            for index, child, child_slot, grad in _input_grads(node, inputs):
                if wanted is None or (*state.names, catalog.node_name(child)) in wanted:
                    _arrive(states, state, index, child, child_slot, grad, catalog)
    return carried


def _arrive(
    states: dict[int, dict[tuple[int, tuple[str, ...]], _State]],
    parent: _State, index: int, child: Any, child_slot: int, grad: torch.Tensor, catalog: NodeCatalog,
) -> None:
    names = (*parent.names, catalog.node_name(child))
    bucket = states.setdefault(id(child), {})
    state = bucket.get((child_slot, names))
    if state is None:
        state = bucket[child_slot, names] = _State(child, catalog.node_id(child, child_slot), child_slot, names,
                                                  (*parent.first, index), grad)
    else:
        state.grad = state.grad + grad
        state.first = min(state.first, (*parent.first, index))
    state.parents[id(parent)] = parent
    state.count += parent.count
    parent.steps.append((index, state))


def _parents_first(root: Any) -> list[Any]:
    """The nodes below `root`, each after every node that feeds it a gradient."""
    order: list[Any] = []
    done: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in done:
            continue
        done.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child, _ in getattr(node, "next_functions", ())
                     if child is not None and id(child) not in done)
    return order[::-1]


def _names_below(nodes: list[Any], catalog: NodeCatalog) -> set[str]:
    """Every leaf, or tensor kept with retain_grad(), at or below these nodes."""
    found: set[str] = set()
    for top in nodes:
        for node in walk_nodes(top):
            found.update(name for output in range(output_count(node))
                         if (name := catalog.read_name(node, output)) is not None)
    return found


def _path(
    leaf: str, names: list[str], reached: list[_State], start: _State, seed: torch.Tensor, output_id: str,
    catalog: NodeCatalog, budget: list[int], vjp: VectorJacobian,
) -> MergedPath:
    ancestors = _ancestors(reached)
    count = sum(state.count for state in reached)
    routes = _routes(start, ancestors, reached) if count <= MAX_LISTED_ROUTES else None
    if routes is not None and (calls := sum(len(route) for route in routes)) <= budget[0]:
        budget[0] -= calls
        return _listed_path(leaf, names, routes, seed, output_id, catalog, vjp)
    grad = reached[0].grad.clone()
    for state in reached[1:]:
        grad = grad + state.grad
    return MergedPath(leaf, names, grad, [], [], _edges(start, ancestors, reached, output_id), count,
                      min(reached, key=lambda state: state.first).node_id)


def _edges(start: _State, ancestors: dict[int, _State], reached: list[_State], output_id: str) -> list[Edge]:
    """The edges of every route to `reached`, each once, in the order listing the routes depth-first
    (each leaf → output) would meet them: by the first route through each edge, then nearer the leaf."""
    ends = {id(state) for state in reached}
    rest: dict[int, tuple[int, ...]] = {}  # the first way on from a state to an end
    for state in sorted(ancestors.values(), key=lambda s: s.order, reverse=True):
        ways = [(index, *rest[id(child)]) for index, child in state.steps if id(child) in rest]
        rest[id(state)] = () if id(state) in ends else min(ways)
    order: dict[Edge, tuple[tuple[int, ...], int]] = {(start.node_id, output_id): (rest[id(start)], 0)}
    for state in ancestors.values():
        for index, child in state.steps:
            if id(child) in rest:
                key = ((*state.first, index, *rest[id(child)]), -len(state.first) - 1)
                edge = (child.node_id, state.node_id)
                order[edge] = min(order.get(edge, key), key)
    return sorted(order, key=lambda edge: order[edge])


def _ancestors(reached: list[_State]) -> dict[int, _State]:
    found: dict[int, _State] = {}
    stack = list(reached)
    while stack:
        state = stack.pop()
        if id(state) in found:
            continue
        found[id(state)] = state
        stack.extend(parent for parent in state.parents.values() if parent is not None)
    return found


def _routes(start: _State, ancestors: dict[int, _State], reached: list[_State]) -> list[Route]:
    """Every route from the output to a state in `reached`, depth-first, as (input index taken, state)
    steps: x*x's two inputs are two routes through the same nodes."""
    ends = {id(state) for state in reached}
    found: list[Route] = []
    stack: list[Route] = [[(-1, start)]]
    while stack:
        route = stack.pop()
        if id(route[-1][1]) in ends:
            found.append(route)
        stack.extend([*route, step] for step in reversed(route[-1][1].steps) if id(step[1]) in ancestors)
    return found


def _listed_path(
    leaf: str, names: list[str], routes: list[Route], seed: torch.Tensor, output_id: str, catalog: NodeCatalog,
    vjp: VectorJacobian,
) -> MergedPath:
    """Each route's own contribution, carried down its nodes one call at a time (as autograd would
    for that route alone), and the path's total as their sum."""
    path = MergedPath(leaf, names, seed, [], [], [], 0, routes[0][-1][1].node_id)
    places: dict[tuple[str, ...], int] = {}
    for number, route in enumerate(routes):
        grad = _route_grad(route, seed, catalog, vjp)
        path.grad = grad.clone() if number == 0 else path.grad + grad
        _add_route(path, places, [state.node_id for _, state in reversed(route)] + [output_id], grad)
    path.route_count = len(path.routes)
    path.edges = route_edges(path.routes)
    return path


def _add_route(path: MergedPath, places: dict[tuple[str, ...], int], ids: list[str], grad: torch.Tensor) -> bool:
    """Lists one route's contribution in `path` (`places`: each listed route's index, by its node ids); a
    route already listed (x*x's second input, the same route in a retained graph's next call) adds to
    its entry. True when the route is new."""
    place = places.get(tuple(ids))
    if place is None:
        places[tuple(ids)] = len(path.routes)
        path.routes.append(ids)
        path.route_grads.append(grad.clone())
        return True
    path.route_grads[place] = path.route_grads[place] + grad
    return False


def _route_grad(route: Route, seed: torch.Tensor, catalog: NodeCatalog, vjp: VectorJacobian) -> torch.Tensor:
    grad = seed
    for (_, state), (index, _) in zip(route, route[1:], strict=False):
        grad = hooked(state.node, grad, catalog.gradient_hooks, state.slot)
        inputs = vjp(state.node, _output_grads(state.node, state.slot, grad))
        grad = next(step_grad for at, _, _, step_grad in _input_grads(state.node, inputs) if at == index)
    last = route[-1][1]
    grad = hooked(last.node, grad, catalog.gradient_hooks, last.slot)
    return reduce_to_shape(grad, node_shape(last.node)) if is_leaf_node(last.node) else grad


def merge_paths(paths: list[MergedPath]) -> dict[str, list[MergedPath]]:
    """The paths of several backward calls by leaf, those with the same names as one: what each
    call contributes adds up, and a route two calls share (a retained graph) is one route."""
    merged: dict[tuple[str, ...], MergedPath] = {}
    places: dict[tuple[str, ...], dict[tuple[str, ...], int]] = {}  # per merged path, as _add_route keeps them
    for path in paths:
        key = (path.leaf, *path.names)
        into = merged.get(key)
        if into is None:
            into = merged[key] = MergedPath(path.leaf, path.names, path.grad.clone(), [], [], [], 0, path.leaf_id)
        else:
            into.grad = into.grad + path.grad
        into.edges = list(dict.fromkeys([*into.edges, *path.edges]))
        into.route_count += path.route_count
        for route, grad in zip(path.routes, path.route_grads, strict=True):
            if not _add_route(into, places.setdefault(key, {}), route, grad):
                into.route_count -= 1
    by_leaf: dict[str, list[MergedPath]] = {}
    for path in merged.values():
        if not path.listed:  # one call had too many routes to list: none listed
            path.routes, path.route_grads = [], []
        by_leaf.setdefault(path.leaf, []).append(path)
    return by_leaf
