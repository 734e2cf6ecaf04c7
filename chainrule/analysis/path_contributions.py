"""Chain-rule paths and what each contributes to a leaf's gradient (or a retained non-leaf's).

Autograd floods the whole graph at once; here we call each node's backward
along one route at a time (a vector-Jacobian product seeded like the real
backward call), so every leaf → … → output route gets its own contribution.
The contributions of all routes of a leaf add up to what the engine put in
its .grad."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.autograd.function import BackwardCFunction

from chainrule.analysis.node_catalog import NodeCatalog, is_leaf_node, node_shape

VectorJacobian = Callable[[Any, list[torch.Tensor]], tuple[torch.Tensor | None, ...]]
Hooks = Callable[[Any], list[Any]]  # node → the program's hooks on the gradient arriving at it


def no_hooks(node: Any) -> list[Any]:
    return []


def hooked(node: Any, grad: torch.Tensor, hooks: Hooks) -> torch.Tensor:
    """The gradient after the program's tensor hooks (a gradient reversal's g ↦ -λg), as autograd
    applies them; a hook is linear in practice, so it may be applied route by route."""
    for hook in hooks(node):
        changed = hook(grad)
        grad = changed if isinstance(changed, torch.Tensor) else grad
    return grad

MAX_NODE_CALLS = 20_000  # guards against graphs with exponentially many routes


@dataclass
class Route:
    leaf: str  # or a non-leaf tensor kept with retain_grad(): its route starts at the node that made it
    node_ids: list[str]  # leaf → … → output
    names: list[str]
    grad: torch.Tensor  # shaped like the leaf


@dataclass
class RouteSearch:
    routes: list[Route] = field(default_factory=list)
    capped_leaves: set[str] = field(default_factory=set)
    exhausted: bool = False


@dataclass
class MergedPath:
    """Routes with the same names are one path to a student (x*x has two
    edges into mul, both `x → mul`); their contributions add."""

    leaf: str
    names: list[str]
    grad: torch.Tensor
    routes: list[list[str]]
    route_grads: list[torch.Tensor] = field(default_factory=list)  # per route (x*x's two edges are one route)


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


def find_routes(
    *,
    root: Any,
    seed: torch.Tensor,
    catalog: NodeCatalog,
    output_id: str,
    output_name: str,
    max_paths: int,
    vjp: VectorJacobian = node_vjp,
) -> RouteSearch:
    search = RouteSearch()
    names_seen: dict[str, set[tuple[str, ...]]] = {}
    stack: list[tuple[Any, int, torch.Tensor, list[str], list[str]]] = [
        (root, 0, seed, [output_id], [output_name])
    ]
    calls = 0
    while stack:
        node, slot, grad, ids, names = stack.pop()
        ids, names = [*ids, catalog.node_id(node)], [*names, catalog.node_name(node)]
        if slot == 0:
            grad = hooked(node, grad, catalog.gradient_hooks)
            kept = None if is_leaf_node(node) else catalog.read_name(node)
            if kept is not None:  # retain_grad(): the route so far ends at this tensor too, and goes on
                _keep_route(search, names_seen, Route(kept, ids[::-1], [kept, *names[-2::-1]], grad), max_paths)
        if is_leaf_node(node):
            route = Route(names[-1], ids[::-1], names[::-1], reduce_to_shape(grad, node_shape(node)))
            _keep_route(search, names_seen, route, max_paths)
            continue
        calls += 1
        if calls > MAX_NODE_CALLS:
            search.exhausted = True
            break
        inputs = vjp(node, _output_grads(node, slot, grad))
        stack.extend(reversed(_steps_into_inputs(node, inputs, ids, names)))
    return search


def _steps_into_inputs(
    node: Any, inputs: tuple[torch.Tensor | None, ...], ids: list[str], names: list[str]
) -> list[tuple[Any, int, torch.Tensor, list[str], list[str]]]:
    steps = []
    for (child, child_slot), child_grad in zip(node.next_functions, inputs, strict=False):
        if child is None:
            continue  # an input that does not require grad: a constant to autograd
        shape = node_shape(child, child_slot)
        child_grad = torch.zeros(shape) if child_grad is None else reduce_to_shape(child_grad, shape)
        steps.append((child, child_slot, child_grad, ids, names))
    return steps


def _keep_route(
    search: RouteSearch, names_seen: dict[str, set[tuple[str, ...]]], route: Route, max_paths: int
) -> None:
    seen = names_seen.setdefault(route.leaf, set())
    key = tuple(route.names)
    if key not in seen and len(seen) >= max_paths:
        search.capped_leaves.add(route.leaf)
        return
    seen.add(key)
    search.routes.append(route)


def merge_routes(routes: list[Route]) -> dict[str, list[MergedPath]]:
    merged: dict[tuple[str, ...], MergedPath] = {}
    at: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}  # (path, route's node ids) → its place in the path
    for route in routes:
        key = (route.leaf, *route.names)
        path = merged.get(key)
        if path is None:
            merged[key] = MergedPath(route.leaf, route.names, route.grad.clone(), [route.node_ids],
                                     [route.grad.clone()])
            at[key, tuple(route.node_ids)] = 0
            continue
        path.grad = path.grad + route.grad
        place = at.get((key, tuple(route.node_ids)))
        if place is None:
            at[key, tuple(route.node_ids)] = len(path.routes)
            path.routes.append(route.node_ids)
            path.route_grads.append(route.grad.clone())
        else:
            path.route_grads[place] = path.route_grads[place] + route.grad
    by_leaf: dict[str, list[MergedPath]] = {}
    for path in merged.values():
        by_leaf.setdefault(path.leaf, []).append(path)
    return by_leaf
