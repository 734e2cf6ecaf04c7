"""Every mutation of every node of one backward call, measured: how each
leaf's gradient changes when that one node's vector-Jacobian product is the
student's wrong one. Also the right local derivative of every edge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from chainrule.analysis.mutations.flood import Flood, flood, keep_responses, leaf_deltas, unit_below
from chainrule.analysis.mutations.generic import node_mutations
from chainrule.analysis.mutations.input_symbols import input_labels, placeholder
from chainrule.analysis.mutations.mutation_types import Mutation, NodeContext, RightDerivative
from chainrule.analysis.mutations.pairs import below, in_series, pair_grads, pairable, pairs_of
from chainrule.analysis.mutations.rules import rule_deltas, rule_detail, rule_groups
from chainrule.analysis.node_catalog import NodeCatalog, is_leaf_node
from chainrule.analysis.path_contributions import has_hooks
from chainrule.analysis.tensors import tensor_to_value
from chainrule.op_names import op_name

MAX_MUTATIONS_PER_CALL = 5_000
NEGLIGIBLE = 1e-9
MAX_SHOWN_VALUES = 6  # a factor's values are quoted in the words up to this many entries


@dataclass
class MeasuredMutation:
    detail: dict[str, Any]  # JSON-safe: edge names, used/right formulas, rule, lesson
    edge: tuple[str, str]  # node ids, forward direction
    deltas: dict[str, torch.Tensor]  # leaf name → wrong minus right


@dataclass
class CallMutations:
    mutations: list[MeasuredMutation] = field(default_factory=list)
    local_derivatives: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    right: dict[str, torch.Tensor] = field(default_factory=dict)
    # scalar leaf → factor's node id → d factor / d leaf, for both factors of each scalar product or quotient
    factor_grads: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)


def measure_call(
    *, root: Any, seed: torch.Tensor, catalog: NodeCatalog, leaves: set[str], root_slot: int = 0,
) -> CallMutations:
    with torch.no_grad():
        return _measure(root, seed, catalog, leaves, catalog.read_name, root_slot)


def _measure(
    root: Any, seed: torch.Tensor, catalog: NodeCatalog, leaves: set[str], leaf_name: Any, root_slot: int = 0,
) -> CallMutations:
    record = flood(root, seed, leaf_name, catalog.gradient_hooks, root_slot)
    keep_responses(record, leaf_name)
    found = CallMutations(right={name: grad for name, grad in record.leaves.items() if name in leaves},
                          factor_grads=_factor_grads(record, catalog, leaf_name, leaves))
    singles: list[tuple[Any, Mutation, MeasuredMutation]] = []
    everywhere: list[tuple[Any, Mutation]] = []  # every mutation, measured or not: a rule's sites
    sites = _sites(record.order)
    for node in record.order:
        if is_leaf_node(node) or id(node) not in record.outgoing:
            continue
        context = _context(node, record, catalog)
        try:
            rights, mutations = node_mutations(context)
        except (RuntimeError, ValueError, TypeError, AttributeError, IndexError) as error:
            found.notes.append(f"local derivatives of {op_name(type(node).__name__)} not analysed: {error}")
            continue
        for right in rights:
            child = node.next_functions[right.slot][0]
            found.local_derivatives.append({"source": _input_id(node, right.slot, catalog),
                                            "target": catalog.node_id(node),
                                            "formula": right.formula, "value": _plain(right.value)})
            if right.passes:
                found.notes.append(_unseen_slips(right, child, node, catalog))
        for mutation in mutations:
            if len(found.mutations) >= MAX_MUTATIONS_PER_CALL:
                found.notes.append(f"only the first {MAX_MUTATIONS_PER_CALL} wrong local derivatives were tried")
                return found
            everywhere.append((node, mutation))
            measured = _measured(mutation, node, record, catalog, leaf_name, leaves)
            if measured is not None:
                measured.detail["site"] = sites[id(node)]
                found.mutations.append(measured)
                singles.append((node, mutation, measured))
    found.mutations.extend(_rules(root, seed, record, catalog, leaf_name, leaves, everywhere))
    found.mutations.extend(_pairs(root, seed, record, catalog, leaf_name, leaves, singles))
    return found


MAX_FACTORS = 256  # factors whose derivative is measured in one backward call


def _factor_grads(
    record: Flood, catalog: NodeCatalog, leaf_name: Any, leaves: set[str]
) -> dict[str, dict[str, torch.Tensor]]:
    """d(factor)/d(leaf) for both factors of each scalar product or quotient and each scalar leaf: what the
    product rule's prediction is built from (the routes through the edge factor → product add up to
    g · d(product)/d(factor) · d(factor)/d(leaf), also when they are too many to list)."""
    scalar = {name for name in leaves if name in record.leaves and record.leaves[name].numel() == 1}
    if not scalar or any(has_hooks(node, record.hooks) for node in record.order):
        return {}
    found: dict[str, dict[str, torch.Tensor]] = {}
    measured: set[str] = set()
    for node in record.order:
        grads = record.incoming.get(id(node))
        if type(node).__name__ not in ("MulBackward0", "DivBackward0") or grads is None or grads[0].numel() != 1:
            continue
        for child, slot in node.next_functions:
            factor = catalog.node_id(child, slot) if child is not None else None
            if factor is None or factor in measured or len(measured) >= MAX_FACTORS:
                continue
            measured.add(factor)
            for name, grad in unit_below(record, child, slot, leaf_name).items():
                if name in scalar:
                    found.setdefault(name, {})[factor] = grad
    return found


def _rules(root: Any, seed: torch.Tensor, record: Flood, catalog: NodeCatalog, leaf_name: Any, leaves: set[str],
           everywhere: list[tuple[Any, Mutation]]) -> list[MeasuredMutation]:
    """One wrong rule held at every node of its op (chainrule.analysis.mutations.rules): one re-run each."""
    found = []
    for members in rule_groups(everywhere, lambda node: input_labels(node, catalog)):
        deltas = rule_deltas(root=root, seed=seed, record=record, leaf_name=leaf_name, leaves=leaves,
                             members=members, context_of=_context_of(catalog))
        if deltas is None:
            continue
        node, mutation = members[0]
        child = node.next_functions[mutation.slots[0]][0]
        labels = input_labels(node, catalog)
        detail = {**rule_detail(members, labels), "edge": [catalog.node_name(child), op_name(type(node).__name__)],
                  "label": labels[mutation.slots[0]],
                  "rule_edges": [[catalog.node_name(other.next_functions[m.slots[0]][0]), op_name(type(other).__name__)]
                                 for other, m in members],
                  "rule_edge_ids": [[_input_id(other, m.slots[0], catalog), catalog.node_id(other)]
                                    for other, m in members]}
        found.append(MeasuredMutation(detail, (_input_id(node, mutation.slots[0], catalog), catalog.node_id(node)),
                                      deltas))
    return found


def _context_of(catalog: NodeCatalog) -> Any:
    def context_of(node: Any, grads: list[torch.Tensor], inputs: Any) -> NodeContext:
        return NodeContext(node, grads, inputs, input_labels(node, catalog), _value_of(node, catalog),
                           lambda other: input_labels(other, catalog), catalog.forward_value)

    return context_of


def _pairs(
    root: Any, seed: torch.Tensor, record: Flood, catalog: NodeCatalog, leaf_name: Any, leaves: set[str],
    singles: list[tuple[Any, Mutation, MeasuredMutation]],
) -> list[MeasuredMutation]:
    measured = {id(mutation): item for _, mutation, item in singles}
    chosen = pairable([(node, mutation) for node, mutation, _ in singles], record)

    def context_of(node: Any, grads: list[torch.Tensor], inputs: Any) -> NodeContext:
        return NodeContext(node, grads, inputs, input_labels(node, catalog), _value_of(node, catalog),
                           lambda other: input_labels(other, catalog), catalog.forward_value)

    found = []
    reach = below(record)
    for first, second in pairs_of(chosen, [(node, mutation) for node, mutation, _ in singles], record):
        a, b = measured[id(first[1])], measured[id(second[1])]
        if in_series(first, second, reach):
            grads = pair_grads(root=root, seed=seed, record=record, leaf_name=leaf_name, first=first,
                               second=second, context_of=context_of)
            deltas = {name: grads[name] - right for name, right in record.leaves.items()
                      if name in leaves and name in grads}
        else:
            deltas = {name: _summed(a.deltas.get(name), b.deltas.get(name)) for name in {*a.deltas, *b.deltas}}
        if not any(float(delta.abs().max()) > NEGLIGIBLE for delta in deltas.values() if delta.numel()):
            continue
        detail = {"rule": "pair", "pair_rules": [a.detail["rule"], b.detail["rule"]],
                  "used": f"{a.detail['used']}; {b.detail['used']}",
                  "pair_edges": [list(a.edge), list(b.edge)],
                  "mistakes": [_component(a), _component(b)]}
        found.append(MeasuredMutation(detail, a.edge, deltas))
    return found


def _unseen_slips(right: RightDerivative, child: Any, node: Any, catalog: NodeCatalog) -> str:
    """For the author: catalogued slips that give the right number at these values are marked right."""
    op, used = op_name(type(node).__name__), list(right.passes)
    slips = used[0] if len(used) == 1 else ", ".join(used[:-1]) + f" or {used[-1]}"
    return (f"at these values {slips} as the local derivative of {op} (the edge {catalog.node_name(child)} → {op}) "
            f"gives the same number as the right one, {right.formula}: a student who makes "
            f"{'that slip' if len(used) == 1 else 'one of those slips'} is marked right; values where they differ "
            "would tell them apart")


def _summed(left: torch.Tensor | None, right: torch.Tensor | None) -> torch.Tensor:
    if left is None or right is None:
        found = left if left is not None else right
        assert found is not None
        return found
    return left + right


def _component(item: MeasuredMutation) -> dict[str, Any]:
    keys = ("edge", "op", "rule", "used", "right", "label", "lesson")
    note = {"label_note": item.detail["label_note"]} if "label_note" in item.detail else {}
    return {"kind": "wrong_local_derivative", **{key: item.detail[key] for key in keys}, **note,
            "edge_ids": list(item.edge)}


def _value_of(node: Any, catalog: NodeCatalog) -> Any:
    def value_of(slot: int) -> torch.Tensor | None:
        child, output = node.next_functions[slot]
        return catalog.forward_value(child, output) if child is not None else None

    return value_of


def _input_id(node: Any, slot: int, catalog: NodeCatalog) -> str:
    """The graph id of what feeds input `slot` of `node` (the b of a, b = x.chunk(2) has its own)."""
    child, output = node.next_functions[slot]
    return catalog.node_id(child, output)


def _sites(order: list[Any]) -> dict[int, int]:
    """Which occurrence of its op each node is, in backward order: the same op of a loop body has
    the same site in every iteration's backward call, so one slip made in every call adds up."""
    seen: dict[str, int] = {}
    sites = {}
    for node in order:
        name = type(node).__name__
        sites[id(node)] = seen.get(name, 0)
        seen[name] = sites[id(node)] + 1
    return sites


def _context(node: Any, record: Flood, catalog: NodeCatalog) -> NodeContext:
    return NodeContext(node, record.incoming[id(node)], record.outgoing[id(node)], input_labels(node, catalog),
                       _value_of(node, catalog), lambda other: input_labels(other, catalog), catalog.forward_value)


def _measured(
    mutation: Mutation, node: Any, record: Flood, catalog: NodeCatalog, leaf_name: Any, leaves: set[str],
) -> MeasuredMutation | None:
    deltas = {name: delta for name, delta in leaf_deltas(record, node, mutation.wrong, leaf_name).items()
              if name in leaves}
    if not any(float(delta.abs().max()) > NEGLIGIBLE for delta in deltas.values() if delta.numel()):
        return None
    child = node.next_functions[mutation.slots[0]][0]
    op = op_name(type(node).__name__)
    detail: dict[str, Any] = {
        "edge": [catalog.node_name(child), op],
        "op": op,
        "rule": mutation.rule,
        "generic": mutation.generic,
        "family": "generic" if mutation.generic else "structural" if mutation.structural else "elementwise",
        "used": mutation.used,
        "right": mutation.right,
        "lesson": mutation.lesson,
        "label": input_labels(node, catalog)[mutation.slots[0]],
    }
    if detail["label"] == placeholder(catalog):
        detail["label_note"] = f"the output of {op_name(type(child).__name__)}"
    scale = uniform_scale(mutation, record.outgoing[id(node)])
    if scale is not None:
        detail["scale"] = scale  # the wrong factor is this multiple of the right one, entry for entry
    for key, value in (("used_value", mutation.used_value), ("right_value", mutation.right_value)):
        if value is not None and value.numel() <= MAX_SHOWN_VALUES and bool(torch.isfinite(value).all()):
            detail[key] = float(value) if value.numel() == 1 else _plain(value)
    return MeasuredMutation(detail, (_input_id(node, mutation.slots[0], catalog), catalog.node_id(node)), deltas)


def uniform_scale(mutation: Mutation, right: tuple[torch.Tensor | None, ...]) -> float | None:
    """k when the mutated edge passes k times the right gradient: then every path through it scales by k."""
    if len(mutation.slots) != 1:
        return None
    slot = mutation.slots[0]
    wrong, real = mutation.wrong[slot], right[slot] if slot < len(right) else None
    if wrong is None or real is None or wrong.shape != real.shape:
        return None
    w, r = wrong.double().reshape(-1), real.double().reshape(-1)
    norm = float(r @ r)
    if norm == 0.0:
        return None
    k = float(w @ r) / norm
    return round(k, 12) if torch.allclose(w, k * r, rtol=1e-5, atol=1e-9 * max(1.0, float(r.abs().max()))) else None


def _plain(tensor: torch.Tensor) -> Any:
    return tensor_to_value(tensor.detach().double())
