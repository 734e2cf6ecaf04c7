"""Predicted wrong answers for one gradient part, one builder per kind of
mistake. Everything is precomputed with numbers only, so diagnosing an answer
later is a comparison against this list, with no torch and no program run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from chainrule.model import Edge, Graph, Highlight, Hypothesis, route_edges
from chainrule.op_names import KINK_OPS
from chainrule.values import Value, rounded_array, rounded_together, shapes_compatible

MAX_PATH_PAIRS = 64
MAX_ALIKE_ROUTES = 3  # routes with the same names (two LSTM gates) worth leaving out one by one


@dataclass
class PathFacts:
    names: list[str]
    routes: list[list[str]]  # node ids of each route (leaf → output) while a path has few; else empty
    grad: np.ndarray
    route_grads: list[np.ndarray] = field(default_factory=list)  # per route, where routes share the names
    edges: list[Edge] = field(default_factory=list)  # every route's, each once; from `routes` when not given

    def __post_init__(self) -> None:
        if not self.edges:
            self.edges = route_edges(self.routes)


@dataclass
class GradientFacts:
    """What is known about one leaf's gradient, as plain arrays."""

    part: str
    leaf: str
    leaf_id: str
    grad: np.ndarray
    paths: list[PathFacts]
    cut_paths: list[PathFacts] = field(default_factory=list)  # only in the detach-identity run
    untracked_paths: list[PathFacts] = field(default_factory=list)  # only with torch.no_grad() ignored
    counterfactual: dict[str, np.ndarray] = field(default_factory=dict)  # re-run mode → this part
    backward_calls: int = 1  # calls still summed in .grad (none zeroed in between)
    output_ids: list[str] = field(default_factory=list)
    non_scalar_outputs: list[str] = field(default_factory=list)
    # (detail, edge, the difference it makes to grad, the flat indices of the entries it changes)
    mistakes: list[tuple[dict[str, Any], Edge, np.ndarray, np.ndarray]] = field(default_factory=list)
    seeds: list[tuple[dict[str, Any], np.ndarray]] = field(default_factory=list)
    accumulation_beliefs: list[tuple[dict[str, Any], np.ndarray]] = field(default_factory=list)
    kink_edges: list[tuple[str, str]] = field(default_factory=list)  # (input name, kink op name) in the graph
    # Every other tensor's gradient: (name, node id, gradient, "below" when it lies below this one on its
    # paths (x under u = 2x + 1: x.grad goes on past u.grad), "above" when this one lies below it, else "")
    other_grads: list[tuple[str, str, np.ndarray, str]] = field(default_factory=list)
    node_grads: dict[str, Any] = field(default_factory=dict)  # d output / d node, by node id (the picture's flow)
    zero_kinks: list[str] = field(default_factory=list)  # relu nodes with an input entry exactly 0 (slope 0 there)
    node_formulas: dict[str, str] = field(default_factory=dict)  # op node id → "sin(x)"
    factor_grads: dict[str, float] = field(default_factory=dict)  # factor node id → d factor / d this leaf
    rounded_grad: np.ndarray | None = None  # grad as as_value rounds it, once
    rounded_value: list[Any] | None = None  # and as nested lists, once


VALUE_DIGITS = 12


def as_value(array: np.ndarray) -> Value:
    value: Value = rounded(array).tolist()
    return value


def rounded(array: np.ndarray) -> np.ndarray:
    # Differences of float32 results carry noise like 0.5838530000000004.
    return rounded_array(np.asarray(array, dtype=float), VALUE_DIGITS)


def near_values(facts: GradientFacts, deltas: list[np.ndarray],
                places: list[np.ndarray] | None = None) -> list[tuple[Value, np.ndarray]]:
    """as_value(facts.grad + delta) and its array for each difference, rounding only the entries it
    changes, all differences' together (a slip deep in a large graph changes a few entries of a large
    gradient, and a large graph has thousands of slips): the rows a difference leaves alone are the
    rounded gradient's own lists, shared, not copies (values are never changed in place)."""
    if facts.grad.ndim == 0 or any(np.shape(delta) != facts.grad.shape for delta in deltas):
        return [(array.tolist(), array) for array in (rounded(facts.grad + delta) for delta in deltas)]
    if facts.rounded_grad is None:
        facts.rounded_grad = rounded(facts.grad)
    if facts.rounded_value is None:
        facts.rounded_value = facts.rounded_grad.tolist()
    grad = facts.grad.reshape(-1)
    if places is None:  # the entries each difference changes
        places = [np.flatnonzero(delta) for delta in deltas]
    entries = rounded_together([grad[place] + delta.reshape(-1)[place] for delta, place in
                                zip(deltas, places, strict=True)], VALUE_DIGITS)
    found = []
    for place, changed in zip(places, entries, strict=True):
        array = facts.rounded_grad.copy()
        array.reshape(-1)[place] = changed
        if 4 * place.size > array.size:  # most of it changes: nothing worth sharing
            found.append((array.tolist(), array))
        else:
            found.append((_patched(facts.rounded_value, array, place), array))
    return found


def _patched(rows: list[Any], array: np.ndarray, place: np.ndarray) -> list[Any]:
    """`array`'s value as nested lists, from `rows` (its value before the flat entries `place` changed):
    the rows (first-axis entries) holding a changed entry are `array`'s, the others are shared."""
    out = list(rows)
    if array.ndim == 1:
        for index, entry in zip(place.tolist(), array[place].tolist(), strict=True):
            out[index] = entry
    elif place.size:
        for row in np.unique(place // (array.size // array.shape[0])).tolist():
            out[row] = array[row].tolist()
    return out


def _hypothesis(
    kind: str, array: np.ndarray, paths: list[PathFacts], highlight: Highlight, **detail: Any
) -> Hypothesis:
    value = rounded(array)
    return Hypothesis(kind, value.tolist(), [p.names for p in paths], highlight, detail, array=value)


def _edges_of(paths: list[PathFacts]) -> list[Edge]:
    return list(dict.fromkeys(edge for path in paths for edge in path.edges))


def _exclusive_edges(group: list[PathFacts], others: list[PathFacts]) -> list[Edge]:
    """Edges only these paths use: the ones worth colouring."""
    shared = {edge for path in others for edge in path.edges}
    edges = [edge for path in group for edge in path.edges]
    exclusive = [edge for edge in edges if edge not in shared]
    return list(dict.fromkeys(exclusive or edges))


def missing_path(facts: GradientFacts) -> Iterator[Hypothesis]:
    paths = facts.paths
    if paths and facts.cut_paths:
        # Beside a detach, every live path left out (0): the detach taken to stop all of the leaf's gradient.
        highlight = Highlight(missing_edges=_exclusive_edges(paths, facts.cut_paths))
        yield _hypothesis("missing_path", facts.grad - sum(path.grad for path in paths), paths, highlight,
                          path_count=len(paths), beside_cut=[path.names for path in facts.cut_paths])
    yield from _missing_routes(facts)
    if len(paths) < 2:
        return  # otherwise leaving out the only path is not "a path missing"
    groups = [[path] for path in paths]
    if len(paths) >= 3:
        groups += [list(pair) for pair in combinations(paths, 2)][:MAX_PATH_PAIRS]
    if len(paths) >= 4:  # only one path followed: every tensor the others pass through taken as a constant
        groups += [[other for other in paths if other is not path] for path in paths]
    for group in groups:
        kept = [path for path in paths if path not in group]
        value = facts.grad - sum(path.grad for path in group)
        highlight = Highlight(missing_edges=_exclusive_edges(group, kept))
        yield _hypothesis("missing_path", value, group, highlight, path_count=len(paths))


def _missing_routes(facts: GradientFacts) -> Iterator[Hypothesis]:
    """One of several routes that read alike (two LSTM gates: x → mul → add → sigmoid → mul → …)
    left out: the student followed one gate and not the other."""
    for path in facts.paths:
        if not 2 <= len(path.route_grads) <= MAX_ALIKE_ROUTES or len(path.route_grads) != len(path.routes):
            continue  # a layer of many units has many routes alike: leaving one out is no single belief
        for route, grad in zip(path.routes, path.route_grads, strict=True):
            others = [other for other in path.routes if other is not route]
            highlight = Highlight(missing_edges=_exclusive_edges(
                [PathFacts(path.names, [route], grad)], [PathFacts(path.names, others, grad)]))
            shared = {node for other in others for node in other}
            own = [facts.node_formulas[node] for node in route if node not in shared and node in facts.node_formulas]
            through = {"through": own[0]} if own else {}  # h·h or 3·h: which of the routes reading alike
            yield _hypothesis("missing_path", facts.grad - grad, [path], highlight, path_count=len(facts.paths),
                              routes=len(path.routes), **through)


def extra_path(facts: GradientFacts) -> Iterator[Hypothesis]:
    for reason, cut in (("detach", facts.cut_paths), ("no_grad", facts.untracked_paths)):
        groups = [cut] + ([[path] for path in cut] if len(cut) > 1 else []) if cut else []
        for group in groups:
            value = facts.grad + sum(path.grad for path in group)
            highlight = Highlight(wrong_edges=_exclusive_edges(group, facts.paths))
            edges = [list(edge) for path in group for edge in path.edges]  # for a slip on the same path too
            yield _hypothesis("extra_path", value, group, highlight, reason=reason, route_edges=edges)


def sign_error(facts: GradientFacts) -> Iterator[Hypothesis]:
    if len(facts.paths) >= 2:
        for path in facts.paths:
            others = [p for p in facts.paths if p is not path]
            highlight = Highlight(wrong_edges=_exclusive_edges([path], others))
            yield _hypothesis("sign_error", facts.grad - 2 * path.grad, [path], highlight, whole=False)
    yield _hypothesis("sign_error", -facts.grad, facts.paths, Highlight(nodes=[facts.leaf_id]), whole=True)


def product_of_paths(facts: GradientFacts) -> Iterator[Hypothesis]:
    if len(facts.paths) >= 2:
        product = np.prod([path.grad for path in facts.paths], axis=0)
        yield _hypothesis("product_of_paths", product, facts.paths, Highlight(nodes=[facts.leaf_id]))


def dead_branch(facts: GradientFacts) -> Iterator[Hypothesis]:
    through_relu = [path for path in facts.paths if "relu" in path.names[1:-1]]
    relu_nodes = [node for path in through_relu for edge in path.edges for node in edge if node.startswith("op")]
    for slopes in ("identity", "dead", "flipped"):
        value = facts.counterfactual.get(f"relu_{slopes}")
        if value is not None and through_relu:
            highlight = Highlight(wrong_edges=_edges_of(through_relu))
            highlight.nodes = list(dict.fromkeys(relu_nodes))
            at_zero = {"at_zero": True} if slopes == "identity" and set(relu_nodes) & set(facts.zero_kinks) else {}
            yield _hypothesis("dead_branch", value, through_relu, highlight, slopes=slopes,
                              **kink_edge(through_relu, frozenset({"relu"})), **at_zero)
    yield from _kinks_ignored(facts)


KINK_NAMES = KINK_OPS


def _kinks_ignored(facts: GradientFacts) -> Iterator[Hypothesis]:
    """Every kink op ignored, in the backward pass only or in the forward pass too (then even a
    leaf whose paths avoid the kink, like a bias added after |x|, gets another gradient)."""
    through = [path for path in facts.paths if KINK_NAMES & set(path.names[1:-1])]
    kinks = list(dict.fromkeys([name for path in through for name in path.names[1:-1] if name in KINK_NAMES]
                               + [kink for _, kink in facts.kink_edges]))
    edges = _edges_of(through)
    for mode in ("backward", "both"):
        value = facts.counterfactual.get(f"kinks_{mode}")
        if value is not None and (through or mode == "both"):
            edge = kink_edge(through, KINK_NAMES) if through else (
                {"edge": list(facts.kink_edges[0])} if len(facts.kink_edges) == 1 else {})
            yield _hypothesis("dead_branch", value, through, Highlight(wrong_edges=edges), slopes=f"kinks_{mode}",
                              kinks=kinks, **edge)


def kink_edge(paths: list[PathFacts], kinds: frozenset[str]) -> dict[str, Any]:
    """{"edge": [source, kink]} when the paths cross exactly one kink input edge."""
    found = {(path.names[i - 1], name) for path in paths for i, name in enumerate(path.names)
             if 0 < i < len(path.names) - 1 and name in kinds}
    return {"edge": list(next(iter(found)))} if len(found) == 1 else {}


def accumulation(facts: GradientFacts) -> Iterator[Hypothesis]:
    if facts.backward_calls < 2:
        return  # nothing accumulates (a single call, or .grad zeroed between calls)
    for mode, counted in (("single_backward", 1), ("extra_backward", facts.backward_calls + 1)):
        value = facts.counterfactual.get(mode)
        if value is not None:
            highlight = Highlight(nodes=[facts.leaf_id, *facts.output_ids])
            yield _hypothesis("accumulation", value, facts.paths, highlight,
                              calls=facts.backward_calls, counted=counted)


def accumulation_belief(facts: GradientFacts) -> Iterator[Hypothesis]:
    highlight = Highlight(nodes=[facts.leaf_id, *facts.output_ids])
    for detail, value in facts.accumulation_beliefs:
        if value.shape == facts.grad.shape:
            yield _hypothesis("accumulation", value, facts.paths, highlight, **detail)


def seed_vector(facts: GradientFacts) -> Iterator[Hypothesis]:
    for detail, delta in facts.seeds:
        highlight = Highlight(nodes=list(facts.output_ids))
        yield _hypothesis("seed_vector", facts.grad + delta, [], highlight, **detail)


def shape(facts: GradientFacts) -> Iterator[Hypothesis]:
    if facts.grad.size <= 1:
        return
    detail = {"non_scalar_outputs": facts.non_scalar_outputs, "shape": list(facts.grad.shape)}
    highlight = Highlight(nodes=[facts.leaf_id])
    yield _hypothesis("shape", facts.grad.sum(), [], highlight, reduction="sum", **detail)
    if facts.grad.ndim == 2 and facts.grad.shape[0] != facts.grad.shape[1]:
        # A square gradient transposed keeps its shape: that is a wrong local derivative (a transpose
        # on the wrong side of a matrix product), not a shape mistake.
        yield _hypothesis("shape", facts.grad.T, [], highlight, reduction="transpose", **detail)


def forward_value(facts: GradientFacts, graph: Graph) -> Iterator[Hypothesis]:
    shape_wanted = list(facts.grad.shape)
    order = {"output": 0, "op": 1, "leaf": 2}
    for node in sorted(graph.nodes, key=lambda n: (order[n.kind], n.tensor_name is None)):
        if node.value is not None and shapes_compatible(node.shape, shape_wanted) and not _all_zero(node.value):
            highlight = Highlight(nodes=[node.id])
            yield Hypothesis("forward_value", node.value, [], highlight,
                             {"node": node.id, "name": node.name, "node_kind": node.kind,
                              "tensor": node.tensor_name, "tracked": node.tracked})


def _all_zero(value: Any) -> bool:
    """A node whose forward value is 0 explains an answer of 0 by coincidence only ("the forward value of
    z" for b.grad = 0, because z happened to be 0 at the seed point): 0 is told as 0."""
    numbers = np.asarray(value, dtype=float).ravel()
    return bool(numbers.size) and bool(np.all(np.abs(numbers) < 1e-6))  # float32 leaves 0.5 - 0.6 + 0.1 at 2e-8


def wrong_local_derivative(facts: GradientFacts) -> Iterator[Hypothesis]:
    by_edge: dict[Edge, list[int]] = {}  # edge → the paths through it, by their index
    for index, path in enumerate(facts.paths):
        for edge_on in dict.fromkeys(path.edges):
            by_edge.setdefault(edge_on, []).append(index)
    singles = [(delta, changed) for detail, _, delta, changed in facts.mistakes if not detail.get("mistakes")]
    values = iter(near_values(facts, [delta for delta, _ in singles], [changed for _, changed in singles]))
    for detail, edge, delta, _ in facts.mistakes:
        if detail.get("mistakes"):
            pair = _two_local_mistakes(facts, detail, delta, by_edge)
            if pair is not None:
                yield pair
            continue
        # a rule held at every node of its op (mutations.rules) is on every path through any of them
        wrong = [tuple(item) for item in detail.get("rule_edge_ids", [])] or [edge]
        indices = by_edge.get(wrong[0], []) if len(wrong) == 1 else \
            sorted({index for edge_on in wrong for index in by_edge.get(edge_on, ())})
        value, array = next(values)
        yield Hypothesis("wrong_local_derivative", value, [facts.paths[index].names for index in indices],
                         Highlight(wrong_edges=wrong), detail, array=array)


def _two_local_mistakes(
    facts: GradientFacts, detail: dict[str, Any], delta: np.ndarray, by_edge: dict[Edge, list[int]]
) -> Hypothesis | None:
    """Both slips of a pair on this leaf's paths; None when one of them does not reach it
    (then the pair predicts what the other slip alone does)."""
    components = []
    for item in detail["mistakes"]:
        edge = tuple(item["edge_ids"])
        through = [facts.paths[index].names for index in by_edge.get(edge, ())]
        if not through:
            return None
        components.append({key: value for key, value in item.items() if key != "edge_ids"} | {"paths": through})
    paths = list(dict.fromkeys(tuple(path) for item in components for path in item["paths"]))
    edges = [tuple(item["edge_ids"]) for item in detail["mistakes"]]
    value = rounded(facts.grad + delta)
    return Hypothesis("two_mistakes", value.tolist(), [list(path) for path in paths],
                      Highlight(wrong_edges=edges), {"mistakes": components, "rule": "pair"}, array=value)


def untracked_answer(facts: GradientFacts) -> Iterator[Hypothesis]:
    """None for a tracked leaf: the predicted answer is None itself."""
    yield Hypothesis("untracked_leaf", None, [], Highlight(nodes=[facts.leaf_id]),
                     {"reason": "tracked", "tensor": facts.leaf})


def product_rule(facts: GradientFacts, graph: Graph) -> Iterator[Hypothesis]:
    """d(u·v)/dx taken as u′·v′, the product of the factors' derivatives (d(x·sin x)/dx as 1·cos x), for a
    scalar product whose two factors both depend on the leaf. The routes into each factor carry
    g·v·u′ and g·u·v′ (g: what reaches the product), so u′ and v′ come out of them (measured directly in
    a single backward call: facts.factor_grads)."""
    if facts.grad.size != 1:
        return
    for node in graph.nodes:
        if node.kind != "op" or node.name not in ("mul", "div"):
            continue
        # the graph lists a node's inputs in autograd's order: a quotient's numerator first
        factors = list(dict.fromkeys(edge.source for edge in graph.edges if edge.target == node.id and not edge.cut))
        values = [_scalar(found.value) if (found := graph.node(source)) is not None else None for source in factors]
        g = _scalar(facts.node_grads.get(node.id))
        if len(factors) != 2 or None in values or not g:
            continue
        u, v = values
        if not u or not v:
            continue
        local = [v, u] if node.name == "mul" else [1 / v, -u / (v * v)]  # d(node)/d(factor)
        s_u, s_v = [_edge_sum(facts, source, node.id, g * edge) for source, edge in zip(factors, local, strict=True)]
        if s_u is None or s_v is None:  # a factor the leaf does not reach
            continue
        others = facts.grad - s_u - s_v  # what the other paths contribute, kept
        labels = [_label(graph, facts, source) for source in factors]
        highlight = Highlight(nodes=[node.id])
        if node.name == "mul":
            wrong = others + g * (s_u / (g * v)) * (s_v / (g * u))
            yield _hypothesis("product_of_paths", np.asarray(wrong, dtype=float), [], highlight, rule="product_rule",
                              node=node.id, factors=labels)
            continue
        du, dv = s_u * v / g, -s_v * v * v / (g * u)  # S_u = g·u′/v and S_v = -g·u·v′/v²
        quotients = [("quotient_rule", g * du / dv if dv else None),  # (u/v)′ taken as u′/v′
                     ("quotient_unsquared", g * (du * v - u * dv) / v)]  # divided by v, not v²
        for rule, value in quotients:
            if value is not None:
                yield _hypothesis("product_of_paths", np.asarray(others + value, dtype=float), [], highlight,
                                  rule=rule, node=node.id, factors=labels)


def _routes_through(facts: GradientFacts, source: str, target: str) -> list[float] | None:
    """The contributions of the leaf's routes that take the edge source → target; None when a path
    with too many routes to list them takes it (what its routes through the edge add up to is not known)."""
    found = []
    for path in facts.paths:
        if not path.routes and (source, target) in path.edges:
            return None
        grads = path.route_grads if len(path.route_grads) == len(path.routes) else [path.grad] * len(path.routes)
        for route, grad in zip(path.routes, grads, strict=True):
            if any(a == source and b == target for a, b in zip(route, route[1:], strict=False)):
                found.append(float(np.asarray(grad, dtype=float).reshape(-1)[0]))
    return found


def _edge_sum(facts: GradientFacts, source: str, target: str, carried: float) -> float | None:
    """What the leaf's routes through the edge source → target add up to, `carried` being what the edge
    carries (g times its local derivative): carried · d(source)/d(leaf) where the reference's backward
    call measured it (facts.factor_grads: one call only; also when the routes are too many to list, or
    were not all enumerated), else the sum of the listed routes. None when the leaf does not reach `source`."""
    derivative = facts.factor_grads.get(source)
    if derivative is not None:
        return carried * derivative
    routes = _routes_through(facts, source, target)
    return sum(routes) if routes else None


def _scalar(value: Any) -> float | None:
    array = np.asarray(value, dtype=float) if value is not None else None
    return float(array.reshape(-1)[0]) if array is not None and array.size == 1 else None


def _label(graph: Graph, facts: GradientFacts, node_id: str) -> str:
    node = graph.node(node_id)
    if node is None:
        return node_id
    return node.tensor_name or facts.node_formulas.get(node_id) or node.name


def other_gradient(facts: GradientFacts) -> Iterator[Hypothesis]:
    """Another tensor's gradient given for this one (u.grad answered with x.grad)."""
    for name, node_id, grad, where in facts.other_grads:
        if grad.shape == facts.grad.shape:
            yield _hypothesis("other_gradient", grad, [], Highlight(nodes=[node_id]), tensor=name, where=where)


BUILDERS: tuple[Callable[[GradientFacts], Iterator[Hypothesis]], ...] = (
    untracked_answer, shape, accumulation, accumulation_belief, missing_path, extra_path, sign_error,
    product_of_paths, dead_branch, seed_vector, wrong_local_derivative, other_gradient,
)


def gradient_hypotheses(facts: GradientFacts, graph: Graph) -> list[Hypothesis]:
    found = [h for build in BUILDERS for h in build(facts)]
    found += list(forward_value(facts, graph))
    found += list(product_rule(facts, graph))
    return _distinct(h for h in found if _differs(h, facts.grad))


def _differs(hypothesis: Hypothesis, grad: np.ndarray) -> bool:
    """A prediction equal to the right answer explains nothing; a non-finite
    one cannot be typed."""
    if hypothesis.value is None:
        return True
    array = hypothesis.array if hypothesis.array is not None else np.asarray(hypothesis.value, dtype=float)
    if not np.all(np.isfinite(array)):
        return False
    if array.size == grad.size == 1 or array.shape == grad.shape:
        given, right = array.reshape(-1), grad.reshape(-1)
        if not np.all(np.isfinite(right)):
            return not np.allclose(given, right, rtol=1e-9, atol=1e-12)
        return not bool(np.all(np.abs(given - right) <= 1e-12 + 1e-9 * np.abs(right)))  # allclose, quicker
    return True


def _distinct(hypotheses: Iterator[Hypothesis]) -> list[Hypothesis]:
    """Each hypothesis once: the same kind, paths, detail and value. The value (a whole gradient) is
    compared only between hypotheses alike in everything else."""
    seen: dict[tuple[Any, ...], list[Value]] = {}
    kept = []
    for hypothesis in hypotheses:
        key = (hypothesis.kind, tuple(map(tuple, hypothesis.paths)), repr(sorted(hypothesis.detail.items())))
        values = seen.setdefault(key, [])
        if hypothesis.value not in values:
            values.append(hypothesis.value)
            kept.append(hypothesis)
    return kept
