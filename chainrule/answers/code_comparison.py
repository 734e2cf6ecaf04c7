"""A program or fix part judged by what the student's program does with autograd, compared with
what the reference does, and explained with the student's own lines.

Who establishes what:
- The worker establishes the values (the validated report) and, from the student's source itself
  (chainrule.answers.source_facts, parsed, never run), whether the code calls autograd at all and
  where it assigns a .grad. Every line it quotes comes from its own copy of the source.
- The harness establishes, while the code runs, the trace (chainrule.analysis.program_trace): the
  backward calls, the resets of .grad between them, detach/.data/no_grad/clone, requires_grad, and
  whether each .grad read was left there by autograd. The student's code runs in that process and
  could forge it, so the trace can only lower a score and choose words, never raise one: values the
  numbers reject stay wrong whatever it says; a trace claiming "computed by autograd" cannot pass a
  .grad when the source has no autograd call at all (the worker's own evidence overrules it); a trace
  saying "by hand" fails the part even with the right values (forging that harms only the forger).
  A trace with lines outside the source or names that are not variables is rejected whole.
- The reference's trace (Analysis.program_trace) comes from the same recorder run on the reference in
  the sandbox. Its lines are never shown: reference code never reaches students."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from chainrule.answers import code_messages as words
from chainrule.answers.code_report import PointOutput
from chainrule.answers.source_facts import SourceFacts
from chainrule.answers.source_ops import has_op
from chainrule.answers.trace_report import GradReset, ProgramTrace
from chainrule.diagnosis.numeric import Diagnosis
from chainrule.model import Analysis, Highlight
from chainrule.values import Value

Finding = tuple[str | None, str, dict[str, Any]]  # kind (None: keep the numbers' kind), message, detail


@dataclass(frozen=True)
class CodeEvidence:
    part: str  # "x.grad"
    answers: list[Value]  # the student's value at each point
    traces: list[ProgramTrace | None]  # the student's trace at each point
    reference: ProgramTrace | None
    analysis: Analysis | None  # the reference at the first point
    facts: SourceFacts

    @property
    def tensor(self) -> str:
        return self.part.removesuffix(".grad")

    @property
    def trace(self) -> ProgramTrace | None:
        return next((trace for trace in self.traces if trace is not None), None)

    @property
    def output(self) -> str:
        calls = self.analysis.backward_calls if self.analysis is not None else []
        return calls[0].output if calls else "the output"


def program_diagnosis(found: Diagnosis, evidence: CodeEvidence) -> Diagnosis:
    """`found` (the numbers' verdict) refused when autograd did not compute the .grad, or its
    message replaced by what the student's code does differently from the reference."""
    refused = _refused(found, evidence) if evidence.part.endswith(".grad") else None
    trace = evidence.trace
    if refused is not None or found.correct or trace is None or found.kind == "code_error":
        return refused or found
    for finder in FINDERS:
        finding = finder(evidence, trace, found)
        if finding is not None:
            kind, message, detail = finding
            same = kind is None or kind == found.kind
            return replace(found, kind=found.kind if same else kind or found.kind, message=message,
                           paths=found.paths if same else [], highlight=found.highlight if same else Highlight(),
                           detail={**found.detail, "code": detail})
    return found


def explained_failure(problem: str, point: PointOutput, facts: SourceFacts) -> str:
    """An error raised at one line whose cause is another: the backward() that freed the graph,
    the in-place op that changed a saved tensor, the cut that left backward() no graph."""
    cause = _cause(point, facts)
    if not cause:
        return problem
    ended = problem.rstrip().endswith((".", "!", "?", ":"))
    return (problem if ended else problem.rstrip() + ".") + cause


def _cause(point: PointOutput, facts: SourceFacts) -> str:
    """The sentence (with its leading space) naming the line that caused the raised error, or ""."""
    raised, trace = point.raised, point.trace
    if raised is None or trace is None:
        return ""
    if "backward through the graph a second time" in raised.message:
        freeing = [site for site in trace.backward[:-1] if not site.retain_graph]
        return words.graph_freed(freeing[-1], raised.line, facts) if freeing else ""
    if "modified by an inplace operation" in raised.message:
        changes = [op for op in trace.ops if op.op == "in_place"]
        return words.changed_in_place(changes[-1], facts) if changes else ""
    if "does not require grad and does not have a grad_fn" in raised.message:
        cuts = [op for op in trace.cuts() if raised.line is None or op.line is None or op.line <= raised.line]
        switched = [leaf.switched for leaf in trace.leaves.values() if leaf.switched is not None]
        if cuts:
            return words.graph_cut_before_backward(cuts[-1], facts)
        if switched:
            return words.tracked_too_late(switched[0], facts)
        return words.NO_GRAPH
    return words.common_error_hint(raised.message)


def _refused(found: Diagnosis, evidence: CodeEvidence) -> Diagnosis | None:
    if all(answer is None for answer in evidence.answers) or not _reference_uses_autograd(evidence):
        return None
    facts = evidence.facts
    how: str | None = None
    line: int | None = None
    if facts.parsed and not facts.autograd_calls:
        how, line = "no_backward", next(iter(facts.grad_assignments.get(evidence.tensor, ())), None)
    else:
        claimed = [trace.grads.get(evidence.part) for trace in evidence.traces if trace is not None]
        by_hand = next((source for source in claimed if source is not None and source.source == "by_hand"), None)
        if by_hand is not None:
            how, line = by_hand.how or "assigned", by_hand.line
    if how is None:
        return None
    message = words.not_autograd(evidence.part, how, line, facts, evidence.output)
    return Diagnosis(evidence.part, False, "not_autograd", [], message, expected=found.expected,
                     detail={"reason": how, "line": line})


def _reference_uses_autograd(evidence: CodeEvidence) -> bool:
    source = evidence.reference.grads.get(evidence.part) if evidence.reference is not None else None
    if source is not None:
        return source.source == "autograd"
    reference = evidence.analysis.parts.get(evidence.part) if evidence.analysis is not None else None
    return reference is not None and reference.value is not None


def _never_called(evidence: CodeEvidence, trace: ProgramTrace, found: Diagnosis) -> Finding | None:
    reference_calls = evidence.reference.backward_count if evidence.reference is not None else \
        len(evidence.analysis.backward_calls) if evidence.analysis is not None else 0
    own = trace.grads.get(evidence.part)
    if trace.backward_count or not reference_calls or (own is not None and own.how == "autograd.grad"):
        return None
    return None, words.never_backward(evidence.tensor, evidence.output), {"finding": "no_backward"}


def _tracking(evidence: CodeEvidence, trace: ProgramTrace, found: Diagnosis) -> Finding | None:
    leaf = trace.leaves.get(evidence.tensor)
    reference = evidence.analysis.parts.get(evidence.part) if evidence.analysis is not None else None
    if leaf is None or reference is None:
        return None
    tensor, facts = evidence.tensor, evidence.facts
    if reference.is_leaf and not leaf.is_leaf:
        line = next(reversed(facts.assignments.get(tensor, ())), leaf.line)
        return "untracked_leaf", words.not_a_leaf(tensor, line, facts), {"finding": "not_a_leaf", "line": line}
    if reference.requires_grad is None or not leaf.is_leaf or leaf.requires_grad == reference.requires_grad:
        return None
    line = leaf.switched or leaf.line
    message = words.tracked_wrongly(tensor, leaf.requires_grad, line, leaf.switched is not None, facts)
    return "untracked_leaf", message, {"finding": "requires_grad", "line": line, "tracked": leaf.requires_grad}


CONSTANT_MAKERS = (".item()", "float(", "math.", "numpy", "np.", ".tolist()")


def _makes_constant(text: str, tensor: str) -> bool:
    """A line that turns a value into a Python number, or a new torch.tensor(...) made from the tensor's
    value (not one that creates the program's data: `x = torch.tensor(xs)` stops no graph)."""
    code = text.split("#", 1)[0]
    if any(maker in code for maker in CONSTANT_MAKERS):
        return True
    made = code.split("torch.tensor(", 1)
    return len(made) == 2 and re.search(rf"(?<![\w.]){re.escape(tensor)}(?!\w)", made[1]) is not None


def _not_reached(evidence: CodeEvidence, trace: ProgramTrace, found: Diagnosis) -> Finding | None:
    """A tracked leaf that no backward() reached: the output was built from a Python number or a fresh
    tensor made of one (`.item()`, `math.sin`), so the graph from the leaf stops there."""
    leaf = trace.leaves.get(evidence.tensor)
    reference = evidence.analysis.parts.get(evidence.part) if evidence.analysis is not None else None
    if leaf is None or reference is None or reference.value is None or not (leaf.is_leaf and leaf.requires_grad):
        return None
    if not all(answer is None for answer in evidence.answers) or not trace.backward \
            or any(evidence.tensor in site.filled for site in trace.backward):
        return None
    facts, tensor = evidence.facts, evidence.tensor
    cuts = [op for op in trace.cuts() if op.line is not None]
    if cuts:  # a detach(), .data or no_grad stops it, not a Python number: told as that cut, at its line
        cut = next((op for op in cuts if op.tensor == tensor), cuts[0])
        return "untracked_leaf", words.extra_cut(cut, tensor, [], facts), {"finding": "not_reached_cut",
                                                                          "line": cut.line, "op": cut.op}
    start = leaf.line or 0
    line = next((number for number, text in enumerate(facts.lines, 1) if number > start
                 and _makes_constant(text, tensor)), None)
    site = trace.backward[0]
    message = words.not_reached(tensor, site.output or evidence.output, site.line, line, facts)
    return "untracked_leaf", message, {"finding": "not_reached", "line": line}


def _stale_graph(evidence: CodeEvidence, trace: ProgramTrace, found: Diagnosis) -> Finding | None:
    """backward() again on an output kept with retain_graph=True where the exercise computes it anew between
    its calls (after an update): the second call is the gradient at the old values, not the new ones."""
    reference = evidence.reference
    if reference is None or len(reference.backward) < 2 or any(site.retain_graph for site in reference.backward):
        return None
    for index, kept in enumerate(trace.backward):
        if not kept.retain_graph or not kept.output:
            continue
        again = next((site for site in trace.backward[index + 1:] if site.output == kept.output), None)
        if again is not None:
            message = words.stale_graph(kept, again, evidence.facts)
            return found.kind, message, {"finding": "stale_graph", "line": again.line}
    return None


def _accumulation(evidence: CodeEvidence, trace: ProgramTrace, found: Diagnosis) -> Finding | None:
    reference, tensor, facts = evidence.reference, evidence.tensor, evidence.facts
    if reference is None:
        return None
    calls, expected = _calls(trace, tensor), _calls(reference, tensor)
    resets, expected_resets = trace.resets_of(tensor), reference.resets_of(tensor)
    counted, expected_counted = _counted(trace, tensor, resets), _counted(reference, tensor, expected_resets)
    sites = trace.fills_of(tensor)
    if not calls or (calls == expected and counted == expected_counted):
        return None
    if calls < expected and trace.backward_count == reference.backward_count:
        return None  # every call is made, one does not reach the tensor: a path is cut, not a call missing
    detail: dict[str, Any] = {"calls": calls, "expected_calls": expected, "counted": counted,
                              "expected_counted": expected_counted, "lines": [site.line for site in sites]}
    last = resets[-1] if resets else None
    if last is not None and counted == 0 and last.before_call > trace.backward_count:  # zeroed at the very end
        message = words.reset_after_last(tensor, last, expected_counted, bool(expected_resets), facts)
        return "accumulation", message, {**detail, "finding": "reset_after_last", "line": last.line}
    # The words count every call the program makes, on every line it makes one (a call that does not reach
    # this .grad is a call all the same: "calls backward() once (line 9)" to a program calling it on 9 and 10).
    made, made_sites = max(trace.backward_count, calls), list(trace.backward) or sites
    if resets and not expected_resets:
        message = words.zeroed_between(tensor, resets[0], _around(trace, resets[0]), counted, facts)
        return "accumulation", message, {**detail, "finding": "reset_between", "line": resets[0].line}
    if expected_resets and not resets and calls > 1:
        message = words.never_reset(tensor, made_sites, made, expected_counted)
        return "accumulation", message, {**detail, "finding": "never_reset",  # the calls that add up unreset
                                         "cause_lines": [site.line for site in made_sites if site.line]}
    if resets and expected_resets and counted != expected_counted:
        misplaced = _misplaced(resets, expected_resets)
        message = words.reset_elsewhere(tensor, misplaced, counted, expected_counted, facts)
        return "accumulation", message, {**detail, "finding": "reset_elsewhere", "line": misplaced.line}
    if calls != expected:
        message = words.call_count(tensor, made_sites, made, expected, expected_counted)
        return "accumulation", message, {**detail, "finding": "call_count",
                                         "cause_lines": [site.line for site in made_sites if site.line]}
    return None


def _misplaced(resets: list[GradReset], expected: list[GradReset]) -> GradReset:
    """The student's reset that restarts the sum where the exercise's do not (a zero_grad() in the wrong place
    among right ones), else the last."""
    places = {reset.before_call for reset in expected}
    return next((reset for reset in resets if reset.before_call not in places), resets[-1])


def _calls(trace: ProgramTrace, tensor: str) -> int:
    """Backward calls that fill the tensor's .grad (calls past the listed ones assumed to, as a loop's)."""
    unlisted = trace.backward_count - len(trace.backward)
    return len(trace.fills_of(tensor)) + (unlisted if unlisted > 0 and trace.fills_of(tensor) else 0)


def _counted(trace: ProgramTrace, tensor: str, resets: list[GradReset]) -> int:
    """The calls still in .grad at the end: those from the last reset on."""
    if not resets:
        return _calls(trace, tensor)
    since = resets[-1].before_call
    listed = [site for index, site in enumerate(trace.backward, start=1) if index >= since and tensor in site.filled]
    unlisted = max(trace.backward_count - max(len(trace.backward), since - 1), 0)
    return len(listed) + unlisted


def _around(trace: ProgramTrace, reset: GradReset) -> list[Any]:
    """The backward calls just before and just after a reset."""
    index = reset.before_call - 1
    return list(trace.backward[max(index - 1, 0): index + 1])


def _cuts(evidence: CodeEvidence, trace: ProgramTrace, found: Diagnosis) -> Finding | None:
    reference, facts, analysis = evidence.reference, evidence.facts, evidence.analysis
    expected_cuts = reference.cuts() if reference is not None else []
    reference_cuts = bool(expected_cuts) or bool(analysis is not None and analysis.graph.cut_edges)
    cuts = trace.cuts()
    # "Nothing cuts the gradient" only where the values carry the path the exercise cuts: a program whose
    # mistake is elsewhere (rounding without the straight-through term) was told it too.
    if reference_cuts and not cuts and (found.kind == "extra_path" or _all_but_the_cut(evidence)):
        paths = found.paths if found.kind == "extra_path" else []
        clones = [op for op in trace.ops if op.op == "clone"]
        if clones:
            return "extra_path", words.cloned(clones[0], paths, facts), {"finding": "clone", "line": clones[0].line}
        frozen = expected_cuts[0].result if expected_cuts else None
        line = next(reversed(facts.assignments.get(frozen, ())), None) if frozen else None
        return "extra_path", words.not_cut(frozen, paths, facts, line), {"finding": "no_cut", "line": line}
    thrown = next((op for op in cuts if op.op == "detach" and op.line in facts.discarded), None)
    if reference_cuts and thrown is not None and found.kind == "extra_path" and thrown.line is not None:
        tensor = facts.discarded[thrown.line]
        return "extra_path", words.detach_discarded(thrown.line, tensor, found.paths, facts), {
            "finding": "detach_discarded", "line": thrown.line}
    expected_inputs = {op.tensor for op in expected_cuts}
    extra = [op for op in cuts if not reference_cuts or op.tensor not in expected_inputs]
    written = next((op for op in extra if op.op == "data" and op.line in facts.data_writes), None)
    if written is not None and written.line is not None:  # not a cut: values changed behind autograd's back
        tensor, rewrite = facts.data_writes[written.line]
        return found.kind, words.data_written(written.line, tensor, rewrite, facts), {
            "finding": "data_write", "line": written.line}
    if extra and (not reference_cuts or found.kind == "missing_path"):
        paths = found.paths if found.kind == "missing_path" else []
        message = words.extra_cut(extra[0], evidence.tensor, paths, facts)
        return "missing_path", message, {"finding": "extra_cut", "line": extra[0].line, "op": extra[0].op}
    return None


def _all_but_the_cut(evidence: CodeEvidence) -> bool:
    """The program has every op of the exercise but its cut (`x + (round(x) - x)` without the detach()): the
    values may read as a path left out (the -x path cancels the kept one), but what is missing is the cut."""
    graph = evidence.analysis.graph if evidence.analysis is not None else None
    ops = {node.name for node in graph.nodes if node.kind == "op"} - {"detach"} if graph is not None else set()
    return bool(ops) and all(has_op(evidence.facts, op) for op in ops)


def _seeded(evidence: CodeEvidence, trace: ProgramTrace, found: Diagnosis) -> Finding | None:
    """The student passed backward() a seed of their own (z.backward(torch.tensor(2.0)), y.backward(2 * v))
    where the exercise passes none, or passed none where it passes one: the seed scales every gradient."""
    reference = evidence.reference
    if reference is None or not trace.backward or not reference.backward:
        return None
    own = next((site for site in trace.backward if site.seeded), None)
    if own is not None and not any(site.seeded for site in reference.backward):
        return "seed_vector", words.own_seed(own, evidence.facts), {"finding": "own_seed", "line": own.line}
    seeded = next((site for site in reference.backward if site.seeded), None)
    if own is None and seeded is not None and found.kind == "unknown":  # y.mean().backward() for y.backward(v)
        first = trace.backward[0]
        return "seed_vector", words.seed_left_out(first, seeded, evidence.facts), {
            "finding": "seed_left_out", "line": first.line}
    return None


FINDERS: tuple[Callable[[CodeEvidence, ProgramTrace, Diagnosis], Finding | None], ...] = (
    _never_called, _tracking, _not_reached, _stale_graph, _accumulation, _cuts, _seeded,
)
