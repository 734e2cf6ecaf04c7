"""analyze_program: run a reference program once for real and a few times
under wrong beliefs, and distil everything feedback needs into an Analysis."""

from __future__ import annotations

import keyword
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from chainrule.analysis.accumulation_beliefs import accumulation_beliefs
from chainrule.analysis.call_inspection import CallEvidence, CallInspector
from chainrule.analysis.counterfactuals import Counterfactuals, modes_worth_running, run_counterfactuals
from chainrule.analysis.execution import run_program
from chainrule.analysis.graph_build import GraphBuilder, tensor_value
from chainrule.analysis.hypotheses import KINK_NAMES, GradientFacts, PathFacts, as_value, gradient_hypotheses
from chainrule.analysis.leaf_evidence import LeafEvidence, gather_leaf_evidence
from chainrule.analysis.node_catalog import NodeCatalog
from chainrule.analysis.node_gradients import FlowRecorder
from chainrule.analysis.op_recording import ProgramRun
from chainrule.analysis.part_tensors import none_part_hypotheses, parse_part_key, read_part
from chainrule.analysis.tensors import sparse_arrays, tensor_to_array
from chainrule.analysis.trace_summary import trace_program
from chainrule.errors import AnalysisError
from chainrule.model import Analysis, BackwardRecord, Graph, Hypothesis, PartReference, PathContribution
from chainrule.values import Value

ParamValue = float | list[Any]
MAX_PARAM_ELEMENTS = 10_000


def analyze_program(
    *, program: str, params: Mapping[str, ParamValue], parts: Sequence[str], max_paths: int = 64
) -> Analysis:
    """Raises ProgramError when the program fails, AnalysisError when a part
    or parameter is unusable."""
    checked = validated_params(params)
    keys = [parse_part_key(part) for part in dict.fromkeys(parts)]
    inspector = CallInspector(max_paths=max_paths, explore_alternatives=True)
    flow = FlowRecorder(inspector)
    run = run_program(program=program, params=checked, observer=flow)
    references = {key.text: read_part(run.namespace, key) for key in keys}
    leaves = gather_leaf_evidence(inspector.evidence)
    graph = _graph_of_counted_calls(inspector, run, leaves)
    accumulating = max((evidence.backward_calls for evidence in leaves.values()), default=0) >= 2
    counterfactuals = run_counterfactuals(
        program=program, params=checked, keys=keys, modes=modes_worth_running(run, graph, accumulating, program),
        max_paths=max_paths, real_paths={leaf: {tuple(p.names) for p in e.paths} for leaf, e in leaves.items()},
    )
    flow_fields = _flow_fields(flow, graph, leaves)
    context = _Context(graph, leaves, counterfactuals, inspector.evidence, flow_fields)
    return Analysis(
        parts=references,
        graph=graph,
        backward_calls=[_backward_record(item) for item in inspector.evidence],
        paths={leaf: _path_contributions(evidence) for leaf, evidence in leaves.items()},
        hypotheses={key: context.hypotheses(reference) for key, reference in references.items()},
        notes=_notes(inspector.evidence, leaves, counterfactuals) + flow.notes,
        local_derivatives=_local_derivatives(inspector.evidence, graph),
        program_trace=trace_program(program=program, params=checked, reads=[key.text for key in keys]),
        **flow_fields,
    )


def _flow_fields(flow: FlowRecorder, graph: Graph, leaves: dict[str, LeafEvidence]) -> dict[str, Any]:
    """The picture's backward flow over the calls still counted in .grad, on the drawn nodes only."""
    counted = {index for evidence in leaves.values() for index in evidence.call_indices}
    drawn = {node.id for node in graph.nodes}
    return {
        "node_grads": {key: value for key, value in flow.node_grads(counted).items() if key in drawn},
        "edge_grads": [item for item in flow.edge_grads(counted) if item.source in drawn and item.target in drawn],
        "node_formulas": {key: value for key, value in flow.formulas.items() if key in drawn},
    }


def _local_derivatives(evidence: list[CallEvidence], graph: Graph) -> list[dict[str, Any]]:
    drawn = {node.id for node in graph.nodes}
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for item in evidence:
        slots = Counter((entry["source"], entry["target"]) for entry in item.local_derivatives)
        for entry in item.local_derivatives:
            if entry["source"] in drawn and entry["target"] in drawn:
                kept = found.setdefault((entry["source"], entry["target"]), dict(entry))
                if slots[(entry["source"], entry["target"])] > 1 and "operands" not in kept:
                    # x*x: one input in several slots, each its own factor (the picture draws one edge each)
                    kept["operands"] = [{"formula": e["formula"], "value": e["value"]} for e in item.local_derivatives
                                        if (e["source"], e["target"]) == (entry["source"], entry["target"])]
    return list(found.values())


def _graph_of_counted_calls(inspector: CallInspector, run: ProgramRun, leaves: dict[str, LeafEvidence]) -> Graph:
    """Only the calls whose gradients are still in some .grad are drawn: a
    training loop would otherwise show one copy of the network per step."""
    counted = {index for evidence in leaves.values() for index in evidence.call_indices}
    evidence = [item for item in inspector.evidence if item.call.index in counted]
    return GraphBuilder(inspector.catalog or NodeCatalog(run), evidence).build()


def validated_params(params: Mapping[str, Any]) -> dict[str, Any]:
    checked = {}
    for name, value in params.items():
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise AnalysisError(f"parameter name {name!r} is not a Python identifier")
        if name.startswith("_") or name == "torch":
            raise AnalysisError(f"parameter name {name!r} is reserved")
        if _count_numbers(value, name, depth=0) > MAX_PARAM_ELEMENTS:
            raise AnalysisError(f"parameter {name!r} has too many numbers")
        checked[name] = value
    return checked


def _count_numbers(value: Any, name: str, *, depth: int) -> int:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise AnalysisError(f"parameter {name!r} is not finite")
        return 1
    if isinstance(value, list) and depth < 8:
        return sum(_count_numbers(item, name, depth=depth + 1) for item in value)
    raise AnalysisError(f"parameter {name!r} must be a number or a (nested) list of numbers")


class _Context:
    def __init__(
        self, graph: Graph, leaves: dict[str, LeafEvidence], counterfactuals: Counterfactuals,
        evidence: list[CallEvidence], flow_fields: dict[str, Any],
    ) -> None:
        self.graph = graph
        self.node_grads, self.node_formulas = flow_fields["node_grads"], flow_fields["node_formulas"]
        self.kink_edges, self.zero_kinks = _kink_edges(graph), _zero_kinks(graph)  # the graph's, for every part
        self.leaves = leaves
        self.counterfactuals = counterfactuals
        self.evidence = evidence
        # every node on some route of each leaf, once: which tensor lies below which on its paths
        self.route_nodes = {name: {node for path in leaf.paths for edge in path.edges for node in edge}
                            for name, leaf in leaves.items()}

    def hypotheses(self, reference: PartReference) -> list[Hypothesis]:
        if reference.value is None:
            return none_part_hypotheses(reference, self.graph)
        if not reference.reads_grad:
            return []  # a forward value asked for directly has no chain-rule story
        return gradient_hypotheses(self._facts(reference), self.graph)

    def _facts(self, reference: PartReference) -> GradientFacts:
        evidence = self.leaves.get(reference.tensor)
        facts = GradientFacts(
            part=reference.key,
            leaf=reference.tensor,
            leaf_id=evidence.node_id if evidence is not None else f"leaf:{reference.tensor}",
            grad=np.asarray(reference.value, dtype=float),
            paths=[],
            non_scalar_outputs=list(dict.fromkeys(
                item.output_name for item in self.evidence if item.call.output.numel() > 1
            )),
        )
        if evidence is None:
            return facts
        facts.paths = [PathFacts(p.names, p.routes, tensor_to_array(p.grad),
                                 [tensor_to_array(g) for g in p.route_grads], p.edges) for p in evidence.paths]
        facts.cut_paths = self.counterfactuals.cut_paths.get(reference.tensor, [])
        facts.untracked_paths = self.counterfactuals.untracked_paths.get(reference.tensor, [])
        facts.counterfactual = self.counterfactuals.for_part(reference.key)
        facts.output_ids = evidence.output_ids
        facts.backward_calls = evidence.backward_calls
        # a slip that does not change this gradient predicts the right answer: none here
        mistakes = [(e, e.edge) for e in evidence.mistakes if e.edge]
        deltas = sparse_arrays([e.deltas[evidence.leaf] for e, _ in mistakes])
        facts.mistakes = [(_edge_from_part(e.detail, edge, evidence), edge, delta, changed)
                          for (e, edge), (delta, changed) in zip(mistakes, deltas, strict=True)
                          if edge is not None and changed.size]
        facts.seeds = [(e.detail, tensor_to_array(e.deltas[evidence.leaf])) for e in evidence.seeds]
        facts.accumulation_beliefs = accumulation_beliefs(self.evidence, reference.tensor)
        facts.kink_edges = self.kink_edges
        facts.other_grads = self._other_grads(evidence)
        facts.node_grads, facts.node_formulas = self.node_grads, self.node_formulas
        facts.zero_kinks = self.zero_kinks
        calls = [item for item in self.evidence if item.call.index in evidence.call_indices]
        if len(calls) == 1:  # one backward call: its factors' derivatives are the leaf's
            facts.factor_grads = {factor: float(grad.reshape(-1)[0])
                                  for factor, grad in calls[0].factor_grads.get(evidence.leaf, {}).items()}
        return facts

    def _other_grads(self, evidence: LeafEvidence) -> list[tuple[str, str, np.ndarray, str]]:
        found = []
        for name, other in self.leaves.items():
            if name == evidence.leaf or other.final_grad is None:
                continue
            below = evidence.node_id in self.route_nodes[name]
            above = other.node_id in self.route_nodes.get(evidence.leaf, set())
            found.append((name, other.node_id, tensor_to_array(other.final_grad), "below" if below else
                          "above" if above else ""))
        return found


def _edge_from_part(detail: dict[str, Any], edge: tuple[str, ...], evidence: LeafEvidence) -> dict[str, Any]:
    """An edge out of a retained non-leaf reads from its name, as its paths do (h → mul, not mul → mul)."""
    if evidence.node_id.startswith("leaf:") or edge[0] != evidence.node_id or "edge" not in detail:
        return detail
    return {**detail, "edge": [evidence.leaf, *detail["edge"][1:]]}


def _zero_kinks(graph: Graph) -> list[str]:
    """ReLU nodes whose blocked entries are all exactly 0 (none negative): torch's slope there is 0, and
    "it saw a negative input" would be false."""
    nodes = graph.nodes_by_id()
    found = []
    for edge in graph.edges:
        node, source = nodes.get(edge.target), nodes.get(edge.source)
        if node is None or node.kind != "op" or node.name != "relu" or source is None or source.value is None:
            continue
        values = np.asarray(source.value, dtype=float)
        if values.size and bool((values == 0).any()) and not bool((values < 0).any()):
            found.append(node.id)
    return found


def _kink_edges(graph: Graph) -> list[tuple[str, str]]:
    nodes = graph.nodes_by_id()
    found = []
    for edge in graph.edges:
        source, target = nodes.get(edge.source), nodes.get(edge.target)
        if source is not None and target is not None and target.kind == "op" and target.name in KINK_NAMES:
            found.append((source.name, target.name))
    return list(dict.fromkeys(found))


def _backward_record(item: CallEvidence) -> BackwardRecord:
    call = item.call
    return BackwardRecord(
        output=item.output_name,
        output_node=item.output_id,
        output_shape=list(call.output.shape),
        seed=tensor_value(call.seed),
        seed_given=call.seed_given,
    )


def _path_contributions(evidence: LeafEvidence) -> list[PathContribution]:
    return [
        PathContribution(evidence.leaf, path.names, _finite_or_none(tensor_to_array(path.grad)), path.edges)
        for path in evidence.paths
    ]


def _finite_or_none(array: np.ndarray) -> Value:
    # JSON has no NaN; a path through sqrt(0) says "no usable number" instead.
    return as_value(array) if np.all(np.isfinite(array)) else None


def _notes(
    evidence: list[CallEvidence], leaves: dict[str, LeafEvidence], counterfactuals: Counterfactuals
) -> list[str]:
    notes = [note for item in evidence for note in item.notes] + counterfactuals.notes
    for leaf, found in leaves.items():
        total, final = found.total, found.final_grad
        if any(f"paths of {leaf} were enumerated" in note for note in notes):
            continue  # capped: the missing paths explain the gap, not hooks
        if total is not None and final is not None and (
            total.shape != final.shape or not torch.allclose(total.double(), final.double(), atol=1e-6)
        ):
            notes.append(f"the path contributions of {leaf} do not add up to {leaf}.grad "
                         "(the program changes .grad outside backward or uses hooks)")
    return list(dict.fromkeys(notes))
