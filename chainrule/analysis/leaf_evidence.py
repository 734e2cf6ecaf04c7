"""Per leaf, everything measured over the backward calls that still count
toward its final .grad (calls before a reset such as zero_() no longer do)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from chainrule.analysis.call_inspection import CallEvidence, Effect
from chainrule.analysis.path_contributions import MergedPath, merge_paths


@dataclass
class LeafEvidence:
    leaf: str
    node_id: str
    paths: list[MergedPath] = field(default_factory=list)
    mistakes: list[Effect] = field(default_factory=list)  # deltas of this leaf only
    seeds: list[Effect] = field(default_factory=list)
    output_ids: list[str] = field(default_factory=list)
    backward_calls: int = 0
    call_indices: list[int] = field(default_factory=list)
    final_grad: torch.Tensor | None = None  # .grad when the program ended

    @property
    def total(self) -> torch.Tensor | None:
        grads = [path.grad for path in self.paths]
        return torch.stack(grads).sum(0) if grads else None


def _same(left: torch.Tensor | None, right: torch.Tensor | None) -> bool:
    if left is None or right is None:
        return left is right
    return left.shape == right.shape and torch.equal(left, right)


def live_calls(evidence: list[CallEvidence], leaf: str) -> list[CallEvidence]:
    """Calls whose gradient is still in the leaf's .grad: a .grad that changed
    between two calls (zero_(), set to None, a fresh tensor under the same
    name) starts the sum again."""
    live: list[CallEvidence] = []
    for item in evidence:
        if leaf not in item.leaves:
            continue
        if live and not _same(item.grad_before[leaf], live[-1].grad_after[leaf]):
            live = []
        live.append(item)
    return live


def gather_leaf_evidence(evidence: list[CallEvidence]) -> dict[str, LeafEvidence]:
    names = list(dict.fromkeys(name for item in evidence for name in item.leaves))
    sites = {id(effect): _site(effect) for item in evidence for effect in item.mistakes}
    return {name: _leaf_evidence(name, live_calls(evidence, name), sites) for name in names}


def _leaf_evidence(leaf: str, calls: list[CallEvidence], sites: dict[int, tuple[Any, ...]]) -> LeafEvidence:
    paths = [path for item in calls for path in item.paths if path.leaf == leaf]
    return LeafEvidence(
        leaf=leaf,
        node_id=paths[0].leaf_id if paths else f"leaf:{leaf}",  # a retained non-leaf: the node that made it
        paths=merge_paths(paths).get(leaf, []),
        mistakes=_summed_effects([e for item in calls for e in item.mistakes], leaf, sites),
        seeds=[Effect(e.detail, {leaf: e.deltas[leaf]}) for item in calls for e in item.seeds if leaf in e.deltas],
        output_ids=list(dict.fromkeys(item.output_id for item in calls)),
        backward_calls=len(calls),
        call_indices=[item.call.index for item in calls],
        final_grad=_final_grad(calls[-1].leaves[leaf]) if calls else None,
    )


def _final_grad(tensor: torch.Tensor) -> torch.Tensor | None:
    return None if tensor.grad is None else tensor.grad.detach().clone()


def _site(effect: Effect) -> tuple[Any, ...]:
    """Where a mistake is made and which: effects alike in this are one mistake made in several calls."""
    where = (tuple(effect.detail["edge"]), effect.detail["site"]) if "site" in effect.detail else effect.edge
    return (where, effect.detail.get("rule"), effect.detail["used"], repr(effect.detail.get("pair_edges")),
            repr(effect.detail.get("pair_rules")))


def _summed_effects(effects: list[Effect], leaf: str, sites: dict[int, tuple[Any, ...]]) -> list[Effect]:
    """The same wrong factor on the same edge is made in every call through
    it (a student who gets d(x³)/dx wrong gets it wrong each time), also when
    each call builds its graph anew (a loop): the edge is then the same site.
    `sites`: _site of each effect, by id."""
    summed: dict[tuple[Any, ...], Effect] = {}
    for effect in effects:
        if leaf not in effect.deltas:
            continue
        key = sites[id(effect)]
        if key in summed:
            summed[key].deltas[leaf] = summed[key].deltas[leaf] + effect.deltas[leaf]
        else:
            summed[key] = Effect(effect.detail, {leaf: effect.deltas[leaf]}, effect.edge)
    return list(summed.values())
