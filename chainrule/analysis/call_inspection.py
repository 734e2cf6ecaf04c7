"""Inspect each backward call while its graph is alive: route contributions,
the effect of every catalogued wrong local derivative, and of plausible wrong
seed vectors. Later in-place changes (an optimiser step, zero_()) cannot
spoil what was measured here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from chainrule.analysis.mutations.inspection import measure_call
from chainrule.analysis.node_catalog import NodeCatalog, is_leaf_node, output_count, walk_nodes
from chainrule.analysis.op_recording import BackwardCall, ProgramRun
from chainrule.analysis.path_contributions import MergedPath, find_paths
from chainrule.analysis.tensors import tensor_to_value

MAX_ONE_HOT_SEEDS = 6


@dataclass
class Effect:
    """How one alternative (a wrong factor, a wrong seed) changes each leaf's
    gradient: wrong minus right, for this backward call."""

    detail: dict[str, Any]
    deltas: dict[str, torch.Tensor]
    edge: tuple[str, str] | None = None


@dataclass
class CallEvidence:
    call: BackwardCall
    output_id: str
    output_name: str
    paths: list[MergedPath]  # this call's, by leaf and names
    leaves: dict[str, torch.Tensor]  # live leaf tensors by name
    leaf_values: dict[str, torch.Tensor]  # their values when backward ran
    grad_before: dict[str, torch.Tensor | None]
    grad_after: dict[str, torch.Tensor | None]
    mistakes: list[Effect] = field(default_factory=list)
    seeds: list[Effect] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    local_derivatives: list[dict[str, Any]] = field(default_factory=list)
    factor_grads: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)  # see mutations.inspection


def _grad_snapshot(leaves: dict[str, torch.Tensor]) -> dict[str, torch.Tensor | None]:
    return {name: None if t.grad is None else t.grad.detach().clone() for name, t in leaves.items()}


class CallInspector:
    """The backward observer of the reference run (see program_run)."""

    def __init__(self, *, max_paths: int, explore_alternatives: bool) -> None:
        self.max_paths = max_paths
        self.explore_alternatives = explore_alternatives
        self.evidence: list[CallEvidence] = []
        self.catalog: NodeCatalog | None = None

    def __call__(self, run: ProgramRun, calls: list[BackwardCall], proceed: Callable[[], None]) -> None:
        if self.catalog is None:
            self.catalog = NodeCatalog(run)
        catalog = self.catalog
        catalog.refresh()
        leaves = {call.index: self._leaves(call, catalog) for call in calls}
        every_leaf = {name: t for found in leaves.values() for name, t in found.items()}
        before = _grad_snapshot(every_leaf)
        proceed()
        after = _grad_snapshot(every_leaf)
        for call in calls:
            self.evidence.append(self._inspect(call, catalog, leaves[call.index], before, after))
        catalog.forget_labels()  # the program goes on and may rebind its names

    def _leaves(self, call: BackwardCall, catalog: NodeCatalog) -> dict[str, torch.Tensor]:
        if call.output.grad_fn is None:
            return {}
        found: dict[str, torch.Tensor] = {}
        for node in walk_nodes(call.output.grad_fn):  # leaves, and the non-leaves kept with retain_grad()
            for output in range(output_count(node)):
                tensor = node.variable if is_leaf_node(node) else catalog.retained_tensor(node, output)
                name = catalog.read_name(node, output) if tensor is not None else None
                if name is not None and tensor is not None:
                    found.setdefault(name, tensor)
        if call.inputs is not None:  # backward(inputs=…) fills only those leaves
            found = {n: t for n, t in found.items() if any(t is w for w in call.inputs)}
        return found

    def _inspect(
        self,
        call: BackwardCall,
        catalog: NodeCatalog,
        leaves: dict[str, torch.Tensor],
        before: dict[str, torch.Tensor | None],
        after: dict[str, torch.Tensor | None],
    ) -> CallEvidence:
        evidence = _new_evidence(call, catalog, leaves, before, after)
        if call.output.grad_fn is None or call.seed is None:
            evidence.notes.append("a backward call on a tensor without a graph has no paths")
            return evidence
        try:
            evidence.paths = self._paths(evidence, catalog)
            if self.explore_alternatives:
                measured = measure_call(root=call.output.grad_fn, seed=call.seed, catalog=catalog,
                                        leaves=set(evidence.leaves), root_slot=call.output.output_nr)
                evidence.mistakes = [Effect(m.detail, m.deltas, m.edge) for m in measured.mutations]
                evidence.local_derivatives = measured.local_derivatives
                evidence.factor_grads = measured.factor_grads
                evidence.notes.extend(measured.notes)
                evidence.seeds = _seed_effects(evidence)
        except Exception as error:  # an exotic node must not fail the grading
            evidence.notes.append(f"paths of backward call {call.index + 1} not analysed: {error}")
        return evidence

    def _paths(self, evidence: CallEvidence, catalog: NodeCatalog) -> list[MergedPath]:
        call = evidence.call
        assert call.seed is not None
        search = find_paths(
            root=call.output.grad_fn,
            seed=call.seed,
            catalog=catalog,
            output_id=evidence.output_id,
            output_name=evidence.output_name,
            max_paths=self.max_paths,
            root_output=call.output.output_nr,
        )
        for leaf in sorted(search.capped_leaves):
            evidence.notes.append(f"only the first {self.max_paths} paths of {leaf} were enumerated")
        if search.exhausted:
            evidence.notes.append("the graph has too many paths to enumerate them all")
        return [path for path in search.paths if path.leaf in evidence.leaves]


def _new_evidence(
    call: BackwardCall,
    catalog: NodeCatalog,
    leaves: dict[str, torch.Tensor],
    before: dict[str, torch.Tensor | None],
    after: dict[str, torch.Tensor | None],
) -> CallEvidence:
    root = call.output.grad_fn
    return CallEvidence(
        call=call,
        output_id=f"out:{catalog.node_id(root, call.output.output_nr)}" if root is not None
        else f"out:call{call.index}",
        output_name=catalog.tensor_name(call.output) or "output",
        paths=[],
        leaves=leaves,
        leaf_values={name: t.detach().clone() for name, t in leaves.items()},
        grad_before={name: before[name] for name in leaves},
        grad_after={name: after[name] for name in leaves},
    )


def _plain(tensor: torch.Tensor) -> Any:
    return tensor_to_value(tensor)


def _seed_effects(evidence: CallEvidence) -> list[Effect]:
    """Non-scalar outputs only: what a one-hot seed, the output itself or an
    all-ones seed would have given instead of the seed the program passed."""
    call = evidence.call
    seed, output = call.seed, call.output
    if seed is None or output.numel() <= 1 or not evidence.leaves:
        return []
    alternatives: list[tuple[dict[str, Any], torch.Tensor]] = []
    for index in range(min(output.numel(), MAX_ONE_HOT_SEEDS)):
        one_hot = torch.zeros(output.numel(), dtype=output.dtype)
        one_hot[index] = 1
        alternatives.append(({"seed": "one_hot", "index": index}, one_hot.reshape(output.shape)))
    alternatives.append(({"seed": "output"}, output.detach()))
    alternatives.append(({"seed": "squared"}, (seed * seed).detach()))  # the seed applied twice
    flipped = seed.detach().reshape(-1).flip(0).reshape(seed.shape)
    if not torch.equal(flipped, seed):  # the entries written in the other order ([b, a] for [a, b])
        alternatives.append(({"seed": "reversed"}, flipped))
    if not torch.equal(seed, torch.ones_like(seed)):
        alternatives.append(({"seed": "ones"}, torch.ones_like(output)))
    if call.seed_scale not in (None, 0.0, 1.0):  # the seed written as k·v: v alone, the scale dropped
        alternatives.append(({"seed": "unscaled", "scale": call.seed_scale}, seed / call.seed_scale))
    names = list(evidence.leaves)
    right = _grads_for_seed(output, [evidence.leaves[n] for n in names], seed)
    effects = []
    for detail, alternative in alternatives:
        wrong = _grads_for_seed(output, [evidence.leaves[n] for n in names], alternative)
        detail = {**detail, "output": evidence.output_name, "given": _plain(seed)}
        effects.append(Effect(detail, {n: w - r for n, w, r in zip(names, wrong, right, strict=True)}))
    return effects


def _grads_for_seed(output: torch.Tensor, leaves: list[torch.Tensor], seed: torch.Tensor) -> list[torch.Tensor]:
    grads = torch.autograd.grad(output, leaves, seed, retain_graph=True, allow_unused=True)
    return [torch.zeros_like(leaf) if g is None else g.detach() for g, leaf in zip(grads, leaves, strict=True)]
