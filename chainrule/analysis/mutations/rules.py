"""Misconceptions as rules: a student who believes tanh′ = 1 + tanh² uses it at every tanh of the
program (both steps of an unrolled RNN), one who takes σ′ = σ does so in every layer. That is ONE
belief, measured by ONE backward pass with the wrong rule at every node of that op, however many there
are; it is told once ("you used 1 + tanh² for tanh′, at both tanh nodes"), and, being one mistake, it is
tried before any pair of two (chainrule.diagnosis.across_points takes single slips first).

A rule is a mutation id (chainrule.analysis.mutations) on the same input slot of nodes of the same
autograd class; catalogued rules and the one generic rule worth believing everywhere (factor 1) are
tried, each where it applies at two or more nodes."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch

from chainrule.analysis.mutations.flood import Flood, flood_with
from chainrule.analysis.mutations.generic import node_mutations
from chainrule.analysis.mutations.mutation_types import InputGrads, Mutation, NodeContext
from chainrule.op_names import op_name

MAX_RULES = 48  # rules re-run per backward call: one backward pass each
BELIEVED_GENERIC = frozenset({"generic_one"})
NEGLIGIBLE = 1e-9

Site = tuple[Any, Mutation]  # (node, the rule's mutation there)
ContextOf = Callable[[Any, list[torch.Tensor], InputGrads], NodeContext]


def rule_groups(sites: list[Site], labels_of: Callable[[Any], list[str]]) -> list[list[Site]]:
    """Every rule that applies at two or more nodes of one single-input op and reads the same at each
    (tanh′ taken as 1 + tanh² wherever tanh is; not a product's factor, which differs from node to node),
    with its sites in backward order."""
    groups: dict[tuple[str, str, tuple[int, ...]], list[Site]] = {}
    for node, mutation in sites:
        if (mutation.generic and mutation.rule not in BELIEVED_GENERIC) or len(node.next_functions) != 1:
            continue
        key = (type(node).__name__, mutation.rule, mutation.slots)
        members = groups.setdefault(key, [])
        if all(other is not node for other, _ in members):
            members.append((node, mutation))
    found = []
    for members in groups.values():
        words = {_words(node, mutation, labels_of) for node, mutation in members}
        if len(members) >= 2 and len(words) == 1 and None not in words:
            found.append(members)
    return found[:MAX_RULES]


def _words(node: Any, mutation: Mutation, labels_of: Callable[[Any], list[str]]) -> tuple[str, str] | None:
    label = labels_of(node)[mutation.slots[0]]
    used, right = neutral(mutation.used, label), neutral(mutation.right, label)
    return (used, right) if used is not None and right is not None and used != right else None


def rule_deltas(*, root: Any, seed: torch.Tensor, record: Flood, leaf_name: Any, leaves: set[str],
                members: list[Site], context_of: ContextOf) -> dict[str, torch.Tensor] | None:
    """Each leaf's gradient minus the right one with the rule at every site; None when it changes nothing.
    At each site the rule is applied to what really reaches it under the belief (the slips in series
    multiply), as the student's own backward pass would."""
    rule, slots = members[0][1].rule, members[0][1].slots
    sites = {id(node) for node, _ in members}

    def transform(node: Any, grads: list[torch.Tensor], inputs: InputGrads) -> InputGrads:
        if id(node) not in sites:
            return inputs
        _, again = node_mutations(context_of(node, grads, inputs))
        same = next((m for m in again if m.rule == rule and m.slots == slots), None)
        return same.wrong if same is not None else inputs

    grads = flood_with(record, root, seed, leaf_name, transform)
    deltas = {name: grads[name] - right for name, right in record.leaves.items() if name in leaves and name in grads}
    if not any(float(delta.abs().max()) > NEGLIGIBLE for delta in deltas.values() if delta.numel()):
        return None
    return deltas


def rule_detail(members: list[Site], labels: list[str]) -> dict[str, Any]:
    """The words of a rule held everywhere: its formulas without any one node's input (tanh′ taken as
    `1 + tanh²`), the op, how many nodes it was applied at."""
    node, mutation = members[0]
    label = labels[mutation.slots[0]]
    return {
        "rule": mutation.rule,
        "op": op_name(type(node).__name__),
        "everywhere": len(members),
        "used": neutral(mutation.used, label),
        "right": neutral(mutation.right, label),
        "lesson": mutation.lesson,
        "generic": mutation.generic,
        "family": "generic" if mutation.generic else "structural" if mutation.structural else "elementwise",
        "site": "every",
    }


def neutral(formula: str, label: str) -> str | None:
    """`1 + tanh²(w·x1)` → `1 + tanh²`: the rule, not its use at one node; None when the node's input
    cannot be taken out (`1/(1 + w·x1)`)."""
    stripped = formula.replace(f"({label})", "") if label else formula
    left = label and re.search(rf"(?<![\w]){re.escape(label)}(?![\w])", stripped)
    return None if left else stripped
