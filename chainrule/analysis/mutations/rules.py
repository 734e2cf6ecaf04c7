"""Misconceptions as rules: a student who believes tanh′ = 1 + tanh² uses it at every tanh of the
program (both steps of an unrolled RNN), one who takes σ′ = σ does so in every layer. That is ONE
belief, measured by ONE backward pass with the wrong rule at every node of that op, however many there
are; it is told once ("you used 1 + tanh² for tanh′, at both tanh nodes"), and, being one mistake, it is
tried before any pair of two (chainrule.diagnosis.across_points takes single slips first).

A rule is a mutation id (chainrule.analysis.mutations) on the same input slot of nodes of the same
autograd class; catalogued rules and the one generic rule worth believing everywhere (factor 1) are
tried, each where it applies at two or more nodes."""

from __future__ import annotations

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


def rule_groups(sites: list[Site]) -> list[list[Site]]:
    """Every rule that applies at two or more nodes of one op, with its sites in backward order."""
    groups: dict[tuple[str, str, tuple[int, ...]], list[Site]] = {}
    for node, mutation in sites:
        if mutation.generic and mutation.rule not in BELIEVED_GENERIC:
            continue
        key = (type(node).__name__, mutation.rule, mutation.slots)
        members = groups.setdefault(key, [])
        if all(other is not node for other, _ in members):
            members.append((node, mutation))
    return [members for members in groups.values() if len(members) >= 2][:MAX_RULES]


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
    """The words of a rule held everywhere: its formulas in a neutral `u` (each site has its own input),
    the op, how many nodes it was applied at."""
    node, mutation = members[0]
    label = labels[mutation.slots[0]]
    return {
        "rule": mutation.rule,
        "op": op_name(type(node).__name__),
        "everywhere": len(members),
        "used_rule": _neutral(mutation.used, label),
        "right_rule": _neutral(mutation.right, label),
        "lesson": mutation.lesson,
        "generic": mutation.generic,
        "family": "generic" if mutation.generic else "structural" if mutation.structural else "elementwise",
        "site": "every",
    }


def _neutral(formula: str, label: str) -> str:
    """`1 + tanh²(w·x1)` → `1 + tanh²(u)`: the rule, not its use at one node."""
    return formula.replace(f"({label})", "(u)") if label and f"({label})" in formula else formula
