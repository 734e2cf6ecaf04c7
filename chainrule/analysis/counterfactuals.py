"""Re-runs of the reference program under a wrong belief: detach() as the
identity, other ReLU slopes, one backward call instead of k, or one too many.
What each re-run leaves in a part is what a student holding that belief would
answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chainrule.analysis.call_inspection import CallInspector
from chainrule.analysis.execution import run_program
from chainrule.analysis.hypotheses import PathFacts
from chainrule.analysis.kink_stand_ins import KINK_MODES, KINK_OP_NAMES
from chainrule.analysis.leaf_evidence import gather_leaf_evidence
from chainrule.analysis.op_recording import ProgramRun, RunMode
from chainrule.analysis.part_tensors import PartKey, read_part
from chainrule.analysis.tensors import tensor_to_array
from chainrule.errors import AnalysisError, ProgramError
from chainrule.model import Graph


@dataclass
class Counterfactuals:
    values: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)  # mode → part → value
    cut_paths: dict[str, list[PathFacts]] = field(default_factory=dict)  # leaf → paths through detach
    untracked_paths: dict[str, list[PathFacts]] = field(default_factory=dict)  # leaf → paths through no_grad
    notes: list[str] = field(default_factory=list)

    def for_part(self, part: str) -> dict[str, np.ndarray]:
        return {mode: values[part] for mode, values in self.values.items() if part in values}


GRAD_MODE_WORDS = ("no_grad", "inference_mode")


def modes_worth_running(run: ProgramRun, graph: Graph, accumulating: bool, program: str = "") -> dict[str, RunMode]:
    """Only beliefs that can change an answer: a detach to ignore, a ReLU to
    misread, or a .grad that really sums several backward calls."""
    modes: dict[str, RunMode] = {}
    if any(op.is_detach for op in run.ops):
        modes["detach_identity"] = RunMode(detach_identity=True)
    if any(word in program for word in GRAD_MODE_WORDS):
        modes["grad_mode_ignored"] = RunMode(grad_mode_ignored=True)
    if any(node.name == "relu" for node in graph.nodes):
        for slopes in ("identity", "dead", "flipped"):
            modes[f"relu_{slopes}"] = RunMode(relu_slopes=slopes)
    if any(node.name in KINK_OP_NAMES for node in graph.nodes):
        for kinks in KINK_MODES:
            modes[f"kinks_{kinks}"] = RunMode(kinks_ignored=kinks)
    if accumulating:
        modes["single_backward"] = RunMode(backward_limit=1)
        modes["extra_backward"] = RunMode(repeat_last_backward=True)
    return modes


def run_counterfactuals(
    *,
    program: str,
    params: Mapping[str, Any],
    keys: list[PartKey],
    modes: dict[str, RunMode],
    max_paths: int,
    real_paths: Mapping[str, set[tuple[str, ...]]] | None = None,
) -> Counterfactuals:
    """`real_paths` (leaf → the names of its paths in the real run) tells which paths of the run
    with no_grad ignored are new: those the block really cuts."""
    found = Counterfactuals()
    for name, mode in modes.items():
        inspector = CallInspector(max_paths=max_paths, explore_alternatives=False)
        try:
            # Only the detach and no_grad re-runs need their paths; the others only what ends up in .grad.
            wanted = mode.detach_identity or mode.grad_mode_ignored
            run = run_program(program=program, params=params, mode=mode, observer=inspector if wanted else None)
        except (ProgramError, AnalysisError) as error:
            # A program may legitimately fail under a wrong belief; that
            # belief then simply predicts no answer.
            found.notes.append(f"counterfactual run {name} failed: {error}")
            continue
        found.values[name] = _part_values(run, keys)
        if mode.detach_identity:
            found.cut_paths = _new_paths(inspector, lambda leaf, names: "detach" in names[1:-1])
        if mode.grad_mode_ignored:
            found.untracked_paths = _new_paths(inspector, _absent_from(real_paths or {}))
    return found


def _part_values(run: ProgramRun, keys: list[PartKey]) -> dict[str, np.ndarray]:
    values = {}
    for key in keys:
        try:
            value = read_part(run.namespace, key).value
        except AnalysisError:
            continue
        if value is not None:
            values[key.text] = np.asarray(value, dtype=float)
    return values


def _absent_from(known: Mapping[str, set[tuple[str, ...]]]) -> Callable[[str, list[str]], bool]:
    return lambda leaf, names: tuple(names) not in known.get(leaf, set())


def _new_paths(inspector: CallInspector, cut: Callable[[str, list[str]], bool]) -> dict[str, list[PathFacts]]:
    """Per leaf, the paths of a re-run that the real run does not have (through a detach, a no_grad block)."""
    found: dict[str, list[PathFacts]] = {}
    for leaf, evidence in gather_leaf_evidence(inspector.evidence).items():
        paths = [PathFacts(path.names, path.routes, tensor_to_array(path.grad), edges=path.edges)
                 for path in evidence.paths if cut(leaf, path.names)]
        if paths:
            found[leaf] = paths
    return found
