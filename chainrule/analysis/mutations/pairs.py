"""Two wrong local derivatives at once (e.g. both tanh′ of an RNN taken as 1),
measured exactly by one backward pass with both nodes replaced: in series the
two slips multiply, so their single effects do not simply add. Only small
graphs, and only the likeliest slips, are paired (the count grows as n²)."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import torch

from chainrule.analysis.mutations.flood import Flood, flood_with
from chainrule.analysis.mutations.generic import node_mutations
from chainrule.analysis.mutations.mutation_types import InputGrads, Mutation, NodeContext

MAX_GRAPH_NODES = 60
MAX_PAIRED = 16
MAX_TWINS = 24  # the same slip at two sites of one op (both means' 1/N, the learning rate in both steps)
PAIRED_GENERIC = frozenset({"generic_one"})

Single = tuple[Any, Mutation]  # (node, mutation)


def pairable(singles: list[Single], record: Flood) -> list[Single]:
    if len(record.order) > MAX_GRAPH_NODES:
        return []
    chosen = [item for item in singles if not item[1].generic or item[1].rule in PAIRED_GENERIC]
    return chosen[:MAX_PAIRED]


def pair_grads(
    *, root: Any, seed: torch.Tensor, record: Flood, leaf_name: Any, first: Single, second: Single,
    context_of: Any,
) -> dict[str, torch.Tensor]:
    wanted = {id(first[0]): first[1], id(second[0]): second[1]}

    def transform(node: Any, grads: list[torch.Tensor], inputs: InputGrads) -> InputGrads:
        mutation = wanted.get(id(node))
        if mutation is None:
            return inputs
        context: NodeContext = context_of(node, grads, inputs)
        _, again = node_mutations(context)
        same = next((m for m in again if m.rule == mutation.rule and m.slots == mutation.slots), None)
        return same.wrong if same is not None else inputs

    return flood_with(record, root, seed, leaf_name, transform)


def pairs_of(chosen: list[Single], singles: list[Single], record: Flood) -> list[tuple[Single, Single]]:
    """The likeliest slips paired, then one belief held at two sites: the same rule on the same
    input of two nodes of the same op, which the first list may have crowded out."""
    found = [(a, b) for a, b in combinations(chosen, 2) if a[0] is not b[0]]
    if len(record.order) > MAX_GRAPH_NODES:
        return found
    seen = {(id(a[1]), id(b[1])) for a, b in found}
    usable = [item for item in singles if not item[1].generic or item[1].rule in PAIRED_GENERIC]
    twins = [(a, b) for a, b in combinations(usable, 2) if a[0] is not b[0] and _twins(a, b)
             and (id(a[1]), id(b[1])) not in seen]
    return found + twins[:MAX_TWINS]


def _twins(a: Single, b: Single) -> bool:
    return type(a[0]).__name__ == type(b[0]).__name__ and a[1].rule == b[1].rule and a[1].slots == b[1].slots


def below(record: Flood) -> dict[int, set[int]]:
    """id(node) → ids of every node its gradient flows into (towards the leaves)."""
    found: dict[int, set[int]] = {}
    for node in reversed(record.order):
        reach: set[int] = set()
        for child, _ in getattr(node, "next_functions", ()):
            if child is not None:
                reach |= {id(child)} | found.get(id(child), set())
        found[id(node)] = reach
    return found


def in_series(first: Single, second: Single, reach: dict[int, set[int]]) -> bool:
    """One node's gradient flows through the other: their slips interact. Otherwise
    backward's linearity makes the pair's effect the sum of the two."""
    a, b = id(first[0]), id(second[0])
    return b in reach.get(a, set()) or a in reach.get(b, set())
