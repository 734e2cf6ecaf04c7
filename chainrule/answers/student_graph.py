"""The graph the student's program made, compared with the reference's structurally
(chainrule.analysis.graph_record records both; chainrule.answers.graph_report reads them back):
a custom torch.autograd.Function whose backward is not its forward's vector-Jacobian product, a
gradient that higher-order autograd needed but was not recorded (create_graph), a tensor hook on
the wrong tensor, without `return` or registered after the backward that should use it, a seed
vector other than the exercise's, an op the exercise's program does not have, and raised errors
told at the line that causes them. Each finding names the student's own line (cause_lines),
quoted from the worker's own copy of the source; the reference's code is never shown.

The student's graph is a claim from the sandbox: a finding can fail a part or choose its words,
never raise a score."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from chainrule.answers.code_comparison import CodeEvidence
from chainrule.answers.code_report import PointOutput
from chainrule.answers.graph_report import AutogradCall, FunctionFact, HookFact, StudentGraph
from chainrule.answers.source_facts import SourceFacts
from chainrule.answers.trace_report import ProgramTrace
from chainrule.diagnosis.numeric import Diagnosis
from chainrule.model import Highlight
from chainrule.result import cause_lines
from chainrule.values import Value, flatten

Finding = tuple[str, str, dict[str, Any]]  # kind, message, detail (with "cause_lines")
_GRADIENT_COUNT = re.compile(r"function (\w+?)Backward returned an incorrect number of gradients "
                             r"\(expected (\d+), got (\d+)\)")
_NO_GRAPH = "does not require grad and does not have a grad_fn"
_NOT_A_TENSOR = re.compile(r"function (\w+?)Backward returned a gradient different than None at position (\d+), "
                           r"but the corresponding forward input was not a Variable")
# Ops whose derivative is zero wherever it exists: no gradient flows back through them.
ZERO_DERIVATIVE = frozenset({"round", "floor", "ceil", "trunc", "sign", "heaviside"})
_ROUNDING_WORDS = {"round": "rounds", "floor": "rounds down (floor)", "ceil": "rounds up (ceil)",
                   "trunc": "truncates", "sign": "takes the sign", "heaviside": "takes a step function"}


def graph_diagnosis(found: Diagnosis, told: Diagnosis, evidence: CodeEvidence) -> Diagnosis:
    """`told` (what chainrule.answers.code_comparison made of `found`) with the student's graph
    compared with the reference's: a structural mistake is named at the student's line."""
    trace = evidence.trace
    if trace is None or told.kind in ("not_autograd", "code_error") or not evidence.part.endswith(".grad"):
        return told
    finders = (_custom_function,) if told.correct else FINDERS
    for finder in finders:
        finding = finder(evidence, trace, told)
        if finding is not None:
            kind, message, detail = finding
            same = kind == told.kind
            return replace(told, correct=False, kind=kind, message=message, paths=told.paths if same else [],
                           highlight=told.highlight if same else Highlight(),
                           detail={**(told.detail if same else found.detail), "code": detail,
                                   "cause_lines": detail["cause_lines"]})
    return told


def failure_diagnosis(part: str, points: Sequence[PointOutput], facts: SourceFacts, reference: ProgramTrace | None,
                      expected: Value) -> Diagnosis | None:
    """A raised error whose cause is another line of the student's program, told at that line with the
    kind of mistake it is (not as a bare code_error where it surfaced)."""
    point = next((point for point in points if point.raised is not None), None)
    if point is None or point.raised is None:
        return None
    raised, trace = point.raised, point.trace
    error = f"Your code raised {raised.message}"
    finding = _count_raised(raised.message, facts, error)
    if finding is None and trace is not None:  # "does not require grad", "backward through the graph a second time"
        finding = _higher_order_missing(trace, reference, facts, error)
    if finding is None and raised.type == "TypeError" and "NoneType" in raised.message:
        finding = _leaf_remade(facts, error) or (_cut_leaf(trace, facts, error) if trace is not None else None)
    if finding is None:
        return None
    kind, message, detail = finding
    return Diagnosis(part, False, kind, [], message, expected=expected,
                     detail={"error": raised.message, "line": raised.line, "code": detail,
                             "cause_lines": detail["cause_lines"]})


def error_cause_lines(points: Sequence[PointOutput], facts: SourceFacts) -> list[int]:
    """The student's line that causes a raised error (chainrule.answers.code_comparison words it): the
    backward() that freed the graph, the in-place op that changed a saved tensor, the cut that left
    backward() no graph; else the line where it was raised."""
    point = next((point for point in points if point.raised is not None), None)
    if point is None or point.raised is None:
        return []
    raised, trace = point.raised, point.trace
    cause: int | None = None
    if trace is not None and "backward through the graph a second time" in raised.message:
        freeing = [site for site in trace.backward[:-1] if not site.retain_graph]
        cause = freeing[-1].line if freeing else None
    elif trace is not None and "modified by an inplace operation" in raised.message:
        changes = [op for op in trace.ops if op.op == "in_place"]
        cause = changes[-1].line if changes else None
    elif trace is not None and _NO_GRAPH in raised.message:
        # every op recorded ran before the error (the program stopped there), in a loop also on later lines
        cuts = trace.cuts()
        switched = [leaf.switched for leaf in trace.leaves.values() if leaf.switched is not None]
        cause = cuts[-1].line if cuts else switched[0] if switched else None
        if cuts and cuts[-1].op == "no_grad" and cause is not None:
            block = _no_grad_block(facts, cause)
            return sorted({cause, block} if block is not None else {cause})
    elif "differentiated Tensors does not require grad" in raised.message:
        cause = _untracked_input(facts, raised.line)
    line = cause or raised.line
    return [line] if line is not None else []


def _no_grad_block(facts: SourceFacts, line: int) -> int | None:
    """The `with torch.no_grad():` line whose block holds `line`."""
    try:
        tree = ast.parse("\n".join(facts.lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    blocks = [node for node in ast.walk(tree) if isinstance(node, ast.With)
              and any("no_grad" in ast.unparse(item.context_expr) for item in node.items)
              and node.lineno < line <= (node.end_lineno or node.lineno)]
    return max(blocks, key=lambda node: node.lineno).lineno if blocks else None


def _untracked_input(facts: SourceFacts, line: int | None) -> int | None:
    """`torch.autograd.grad(out, x)` on `line` with an x that does not require grad: where x was made."""
    try:
        tree = ast.parse("\n".join(facts.lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.lineno == line and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "grad" and len(node.args) > 1 and isinstance(node.args[1], ast.Name):
            made = [number for number in facts.assignments.get(node.args[1].id, ()) if number < node.lineno]
            return made[-1] if made else None
    return None


# --- custom torch.autograd.Function -------------------------------------------------------------

def _custom_function(evidence: CodeEvidence, trace: ProgramTrace, told: Diagnosis) -> Finding | None:
    reference = evidence.reference.graph.functions if evidence.reference is not None else ()
    intended = {fact.name: fact.verdict for fact in reference}
    for fact in trace.graph.functions:
        if fact.verdict in ("right", "not_judged"):
            continue
        # the exercise's own Function is not its forward's derivative (a straight-through estimator, a gradient
        # reversal), under this name or another: the student's is not judged by its forward either
        surrogate = intended.get(fact.name, "right") != "right" or (
            fact.name not in intended and any(verdict != "right" for verdict in intended.values()))
        if fact.verdict != "gradient_count" and surrogate:
            continue
        # right values from a backward that is not its forward's derivative: a mistake only where the exercise's
        # own Function of that name is the true derivative (else it may be a surrogate the exercise allows)
        if told.correct and fact.verdict != "ignores_grad_output" and intended.get(fact.name) != "right":
            continue
        source = function_source(evidence.facts, fact.name)
        if source is not None:
            return _function_words(fact, source, evidence.facts)
    if told.correct or not trace.graph.functions:
        return None
    # the student's Function is not judged by its own forward (a rounding forward): the exercise's is the measure
    own = next((fact for fact in trace.graph.functions if fact.name in intended), None)
    found = _backward_lines(evidence, own.name) if own is not None else None
    if own is None or found is None:
        return None
    source, lines = found
    message = (f"Your {own.name}.backward ({evidence.facts.quoted(source.returns[-1])}) does not give this exercise's "
               f"gradient: backward decides the gradient that flows back through {own.name}, and {evidence.part} "
               f"is wrong at every point checked. Compare what it returns with the gradient the exercise asks "
               "to pass back.")
    return "custom_function", message, {"finding": "function_differs", "cause_lines": lines}


@dataclass
class FunctionSource:
    """A custom Function's methods in the student's source (the worker's own parse)."""

    returns: list[int] = field(default_factory=list)  # the return lines of backward
    saves: list[int] = field(default_factory=list)  # ctx.save_for_backward(...) or ctx.name = … in forward
    inputs: list[str] = field(default_factory=list)  # forward's parameters after ctx
    grad_outputs: list[str] = field(default_factory=list)  # backward's parameters after ctx
    feeding: list[int] = field(default_factory=list)  # backward's lines that compute a name its return uses


def _backward_lines(evidence: CodeEvidence, name: str) -> tuple[FunctionSource, list[int]] | None:
    """The student's Function `name` and the lines its backward's gradient comes from (its last return
    and what feeds it); None when its source or a return is not found."""
    source = function_source(evidence.facts, name)
    if source is None or not source.returns:
        return None
    return source, sorted({*source.returns[-1:], *source.feeding})


def function_source(facts: SourceFacts, name: str) -> FunctionSource | None:
    try:
        tree = ast.parse("\n".join(facts.lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name == name]
    if not classes:
        return None
    found = FunctionSource()
    for method in classes[-1].body:
        if not isinstance(method, ast.FunctionDef):
            continue
        parameters = [argument.arg for argument in method.args.args][1:]
        if method.name == "forward":
            found.inputs = parameters
            found.saves = sorted({getattr(node, "lineno", 0) for node in ast.walk(method) if _saves(node)})
        elif method.name == "backward":
            found.grad_outputs = parameters
            returns = [node for node in ast.walk(method) if isinstance(node, ast.Return)]
            found.returns = sorted({node.lineno for node in returns})
            used = {name.id for node in returns for name in ast.walk(node) if isinstance(name, ast.Name)}
            found.feeding = sorted({node.lineno for node in ast.walk(method) if isinstance(node, ast.Assign)
                                    and any(isinstance(target, ast.Name) and target.id in used
                                            for target in node.targets)
                                    and "saved_tensors" not in ast.unparse(node.value)})
    return found


def _saves(node: ast.AST) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr == "save_for_backward"
    return isinstance(node, ast.Assign) and any(
        isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "ctx"
        for target in node.targets)


def _function_words(fact: FunctionFact, source: FunctionSource, facts: SourceFacts) -> Finding:
    name, returned = fact.name, source.returns[-1:] or []
    where = facts.quoted(returned[0]) if returned else "its return"
    index = fact.input or 0
    tensor = source.inputs[index] if index < len(source.inputs) else "its input"
    grad = source.grad_outputs[0] if source.grad_outputs else "grad_output"
    lines = sorted({*returned, *source.feeding})
    if fact.verdict == "gradient_count":
        expected, got = fact.expected, fact.got
        count = f"{got} gradients" if got is not None else "another number of gradients"
        inputs = f"{expected} input" + ("s" if expected != 1 else "") if expected is not None else "its inputs"
        message = (f"{name}.backward returns {count} on {where}, but {name}.forward takes {inputs} after ctx: "
                   "backward must return exactly one gradient per input of forward, in the same order "
                   "(None for an input that needs none).")
    elif fact.verdict == "swapped_gradients":
        message = (f"{name}.backward returns the gradients in the wrong order on {where}: the gradient it gives for "
                   f"{tensor} is the one for another input, and the other way round. backward returns one gradient "
                   "per input of forward, in forward's order.")
    elif fact.verdict == "ignores_grad_output":
        message = (f"{name}.backward ignores {grad}: {where} returns the local derivative of the forward alone. "
                   f"{grad} is the gradient flowing in from above (of the loss with respect to {name}'s output); "
                   f"by the chain rule backward returns it multiplied by the local derivative: multiply by {grad}.")
    elif fact.verdict == "saved_output":
        saved = source.saves[:1]
        lines = sorted({*saved, *returned})
        message = (f"{name}.forward saves its output ({facts.quoted(saved[0]) if saved else 'ctx'}), and "
                   f"{name}.backward computes the derivative from it on {where} as if it were the input {tensor}: "
                   f"with {tensor} saved instead, your backward gives the right gradient. Save the input: "
                   f"ctx.save_for_backward({tensor}).")
    else:
        message = (f"{name}.backward returns, on {where}, a gradient for {tensor} that is not the derivative of your "
                   f"own {name}.forward: checked against autograd through the forward's ops at the inputs your "
                   f"program gives it, the two differ. Derive the forward's local derivative again and return it "
                   f"multiplied by {grad}.")
    return "custom_function", message, {"finding": fact.verdict, "function": name, "cause_lines": lines}


def _count_raised(message: str, facts: SourceFacts, error: str) -> Finding | None:
    misplaced = _NOT_A_TENSOR.search(message)
    source = function_source(facts, misplaced.group(1)) if misplaced is not None else None
    if misplaced is not None and source is not None and source.returns:
        position, name = int(misplaced.group(2)), misplaced.group(1)
        given = source.inputs[position - 1] if 0 < position <= len(source.inputs) else f"input {position}"
        words = (f"{name}.backward returns a gradient in position {position} ({facts.quoted(source.returns[-1])}), "
                 f"where {name}.forward's input is {given}, a plain number that takes no gradient: backward returns "
                 "one gradient per input of forward, in forward's order, None for an input that is not a tensor.")
        return "custom_function", f"{error}. The cause: {words}", {"finding": "gradient_order",
                                                                   "cause_lines": source.returns[-1:]}
    counted = _GRADIENT_COUNT.search(message)
    source = function_source(facts, counted.group(1)) if counted is not None else None
    if counted is None or source is None or not source.returns:
        return None
    fact = FunctionFact(counted.group(1), "gradient_count", None, int(counted.group(2)), int(counted.group(3)))
    kind, words, detail = _function_words(fact, source, facts)
    return kind, f"{error}. The cause: {words}", detail


# --- higher order -------------------------------------------------------------------------------

def _higher_order(evidence: CodeEvidence, trace: ProgramTrace, told: Diagnosis) -> Finding | None:
    """create_graph=True missing where nothing raised (a gradient penalty that is a constant). A cut of the
    recorded gradient that raises nothing is a path left out, told by the cut findings."""
    if any(call.create_graph for call in trace.graph.calls):
        return None
    return _higher_order_missing(trace, evidence.reference, evidence.facts, None)


def _higher_order_missing(trace: ProgramTrace, reference: ProgramTrace | None, facts: SourceFacts,
                          error: str | None) -> Finding | None:
    """The exercise records the gradient's own computation (create_graph=True) to differentiate it again;
    the student's program never does: told at the student's first call of that kind."""
    wanted = next((call for call in reference.graph.calls if call.create_graph), None) if reference else None
    calls = trace.graph.calls
    if wanted is None or not calls:
        return None
    recorded = next((call for call in calls if call.create_graph), None)
    if recorded is not None:
        return _gradient_cut(trace, reference, recorded, facts, error)
    call = next((call for call in calls if call.kind == wanted.kind), calls[0])
    if call.line is None:
        return None
    what = "torch.autograd.grad" if call.kind == "grad" else "backward()"
    kept = (" retain_graph=True there only keeps the graph alive for another backward pass; it does not record "
            "the gradient's own computation.") if call.retain_graph else ""
    message = (f"{capitalised(facts.quoted(call.line))} calls {what} without create_graph=True, so the gradient it "
               f"gives is a constant to autograd: nothing differentiates through it afterwards (a gradient penalty, "
               f"a second derivative).{kept} Pass create_graph=True on that line.")
    if error is not None:
        message = f"{error}. The cause: {message[:1].lower()}{message[1:]}"
    return "higher_order", message, {"finding": "create_graph_missing", "retain_graph": call.retain_graph,
                                     "cause_lines": [call.line]}


def _gradient_cut(trace: ProgramTrace, reference: ProgramTrace | None, recorded: AutogradCall, facts: SourceFacts,
                  error: str | None) -> Finding | None:
    """create_graph=True recorded the gradient's own computation, and a cut after it (detach(), .data) that the
    exercise does not have throws it away before the second backward."""
    expected = {op.tensor for op in reference.cuts()} if reference is not None else set()
    cut = next((op for op in trace.cuts() if op.line is not None and op.tensor not in expected
                and (recorded.line is None or op.line >= recorded.line)), None)
    if cut is None or cut.line is None:
        return None
    how = {"data": ".data", "detach": "detach()"}.get(cut.op, "torch.no_grad()")
    message = (f"{capitalised(facts.quoted(cut.line))} takes {how} of {cut.tensor or 'the gradient'}, which "
               f"create_graph=True on {facts.quoted(recorded.line)} recorded so that it can be differentiated again: "
               f"the cut copy is a constant to autograd, so the second backward has nothing to differentiate. "
               "Use the gradient itself.")
    if error is not None:
        message = f"{error}. The cause: {message[:1].lower()}{message[1:]}"
    return "higher_order", message, {"finding": "gradient_cut", "cause_lines": [cut.line]}


# --- hooks --------------------------------------------------------------------------------------

def _hooks(evidence: CodeEvidence, trace: ProgramTrace, told: Diagnosis) -> Finding | None:
    graph, facts = trace.graph, evidence.facts
    reference = evidence.reference.graph.hooks if evidence.reference is not None else ()
    intended = {hook.tensor for hook in reference if hook.tensor}
    for hook in graph.hooks:
        if hook.line is None:
            continue
        if hook.calls == 0 and 0 < trace.backward_count <= hook.before_call:
            last = _last_backward(trace, hook)
            before = f" after the backward() on {facts.quoted(last)}" if last is not None else " after backward()"
            message = (f"{capitalised(facts.quoted(hook.line))} registers the hook{before}, which has already run: a "
                       "hook acts only in the backward passes that come after it is registered. Register it before "
                       "calling backward().")
            return "hook", message, {"finding": "hook_after_backward", "cause_lines": [hook.line]}
        if intended and hook.tensor and hook.tensor not in intended:
            target = " or ".join(sorted(intended))
            message = (f"{capitalised(facts.quoted(hook.line))} registers the hook on {hook.tensor}, so it changes the "
                       f"gradient flowing into {hook.tensor}; this exercise's hook is on {target}. A hook acts on the "
                       "gradient of the tensor it is registered on, and through it on everything before that tensor.")
            return "hook", message, {"finding": "hook_wrong_tensor", "cause_lines": [hook.line]}
        if hook.calls and not hook.returned and (not reference or any(other.returned for other in reference)):
            body = hook_body(facts, hook.line)
            where = f" (it ends with {facts.quoted(body[-1])})" if body else ""
            message = (f"The hook registered on {facts.quoted(hook.line)} returns nothing{where}, so autograd keeps "
                       "the gradient unchanged: a tensor hook changes the gradient only through the tensor it returns. "
                       "Return the new gradient from the hook.")
            return "hook", message, {"finding": "hook_no_return", "cause_lines": sorted({hook.line, *body[-1:]})}
    same = next((hook for hook in graph.hooks if hook.line is not None and hook.calls and hook.returned
                 and hook.tensor in intended), None)
    if same is not None and same.line is not None and told.kind == "unknown":
        body = hook_body(facts, same.line)
        returned = f" ({facts.quoted(body[-1])})" if body else ""
        message = (f"Your hook on {same.tensor} ({facts.quoted(same.line)}) is registered where this exercise's is, "
                   f"but what it returns{returned} is not the gradient the exercise passes on: the tensor a hook "
                   "returns replaces the gradient flowing into the tensor, so it must be computed from the gradient "
                   "the hook receives.")
        return "hook", message, {"finding": "hook_returns_other", "cause_lines": sorted({same.line, *body[-1:]})}
    return None


def hook_body(facts: SourceFacts, line: int) -> list[int]:
    """The lines of the function a `t.register_hook(fn)` on `line` registers, when the source defines it (the
    worker's own parse): its last line is where it returns, or fails to."""
    try:
        tree = ast.parse("\n".join(facts.lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and node.lineno == line
             and isinstance(node.func, ast.Attribute) and node.func.attr == "register_hook" and node.args]
    if not calls or not isinstance(calls[0].args[0], ast.Name):
        return []
    name = calls[0].args[0].id
    defined = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == name]
    if not defined or not defined[-1].body:
        return []
    last = defined[-1].body[-1]
    return [defined[-1].lineno, getattr(last, "end_lineno", None) or last.lineno]


def _last_backward(trace: ProgramTrace, hook: HookFact) -> int | None:
    index = min(hook.before_call, len(trace.backward)) - 1
    return trace.backward[index].line if index >= 0 else None


# --- seeds --------------------------------------------------------------------------------------

def _seed_differs(evidence: CodeEvidence, trace: ProgramTrace, told: Diagnosis) -> Finding | None:
    """A seed vector the student passes that is not the exercise's, at the same point (the first)."""
    first = evidence.traces[0] if evidence.traces else None
    if first is None or evidence.reference is None:
        return None
    wanted = _seeded(evidence.reference.graph)
    own = _seeded(first.graph)
    if wanted is None or own is None or wanted.seed is None or own.seed is None or own.line is None \
            or len(wanted.seed) != len(own.seed) or _same(wanted.seed, own.seed):
        return None
    facts = evidence.facts
    lines = sorted({own.line, *([own.seed_line] if own.seed_line is not None else [])})
    made = f", made on {facts.quoted(own.seed_line)}," if own.seed_line not in (None, own.line) else ""
    if sorted(wanted.seed) == sorted(own.seed):
        how = ("has the right entries in another order: the seed's i-th entry weights the i-th output, so the "
               "order matters")
    else:
        how = "is not the exercise's seed"
    message = (f"The seed vector passed to backward() on {facts.quoted(own.line)}{made} {how}. backward(v) computes "
               "vᵀ·J: each output's gradient is weighted by its entry of v.")
    return "seed_vector", message, {"finding": "seed_differs", "cause_lines": lines}


def _seeded(graph: StudentGraph) -> AutogradCall | None:
    return next((call for call in graph.calls if call.seed is not None and len(call.seed) > 1), None)


def _same(left: Sequence[float], right: Sequence[float]) -> bool:
    return all(abs(a - b) <= 1e-6 + 1e-5 * abs(b) for a, b in zip(left, right, strict=True))


def _code(told: Diagnosis) -> dict[str, Any]:
    code = told.detail.get("code")
    return code if isinstance(code, dict) else {}


# --- cuts ---------------------------------------------------------------------------------------

def _extra_cut(evidence: CodeEvidence, trace: ProgramTrace, told: Diagnosis) -> Finding | None:
    """A detach(), .data or torch.no_grad() the exercise does not have, told as the cut it is where the words
    so far spoke of a call count or a leaf no graph reaches (the cut is why)."""
    code = _code(told)
    if told.kind not in ("accumulation", "untracked_leaf", "unknown") or code.get("finding") in (
            "not_a_leaf", "requires_grad", "reset_between", "reset_after_last", "reset_elsewhere", "never_reset"):
        return None
    reference_cuts = evidence.reference.cuts() if evidence.reference is not None else []
    expected = {op.tensor for op in reference_cuts}
    facts = evidence.facts
    extra = [op for op in trace.cuts() if op.line is not None and op.tensor not in expected
             and op.line not in facts.data_writes]
    if not extra or extra[0].line is None or (expected and len(trace.cuts()) <= len(reference_cuts)):
        return None  # as many cuts as the exercise, under other names: not told as one too many
    cut = extra[0]
    how = {"data": ".data", "detach": "detach()"}.get(cut.op, "torch.no_grad()")
    source = f" of {cut.tensor}" if cut.tensor else ""
    message = (f"{capitalised(facts.quoted(cut.line))} cuts the graph with {how}: the copy{source} it makes is a "
               f"constant to autograd, so no gradient flows back through it to {evidence.tensor} along that path. "
               "This exercise's program keeps the path: compute with the tensor itself.")
    return "missing_path", message, {"finding": "extra_cut", "op": cut.op, "cause_lines": [cut.line]}


CONSTANT_MAKERS = (".item()", ".tolist()", "float(", ".numpy()")


def _constant_made(evidence: CodeEvidence, trace: ProgramTrace, told: Diagnosis) -> Finding | None:
    """A path left out where the student's line turns a tensor into a Python number (.item(), float()): the
    numbers' words, with the line where the path stops."""
    if told.kind != "missing_path" or cause_lines(told.detail):
        return None
    facts = evidence.facts
    line = next((number for number, text in enumerate(facts.lines, 1)
                 if any(maker in text for maker in CONSTANT_MAKERS)), None)
    if line is None:
        return None
    message = (f"{told.message} The path stops at {facts.quoted(line)}: a Python number (.item(), float()) is a "
               "constant to autograd, so no gradient flows back through it.")
    return told.kind, message, {"finding": "constant_made", "cause_lines": [line]}


def _accumulation_lines(evidence: CodeEvidence, trace: ProgramTrace, told: Diagnosis) -> Finding | None:
    """An accumulation finding without a line of its own: the backward() calls it is about (past the
    exercise's count when there are more)."""
    code = _code(told)
    if told.kind != "accumulation" or cause_lines(told.detail):
        return None
    sites = [site.line for site in trace.fills_of(evidence.tensor) if site.line is not None]
    expected = code.get("expected_calls")
    if isinstance(expected, int) and 0 < expected < len(sites):
        sites = sites[expected:]
    lines = sorted(set(sites))
    if not lines:
        return None
    return told.kind, told.message, {**code, "cause_lines": lines}


def _changed_lines(evidence: CodeEvidence, trace: ProgramTrace, told: Diagnosis) -> Finding | None:
    """The numbers name a mistake but no line: the student's lines whose autograd ops differ from every line
    of the exercise's program (an op added, dropped or swapped there), when there are at most two. Where the
    numbers' words name an op those lines do not have, the ops that differ are told instead."""
    if told.kind in ("unknown", "correct") or cause_lines(told.detail) or evidence.reference is None:
        return None
    changes = changed_lines(evidence.reference.graph, trace.graph)
    if not changes or len(changes) > 2:
        return None
    facts, lines = evidence.facts, sorted(changes)
    # the ops the numbers' words name: the edge's op, the nodes of the paths
    named = {told.detail.get("op"), *(node for path in told.paths for node in path)}
    own_ops = {op for line in lines for op in changes[line][2]}
    lacking = {op for line in lines for op in changes[line][0]}
    if named & lacking or (isinstance(told.detail.get("op"), str) and told.detail["op"] not in own_ops):
        said = "; ".join(_difference(facts, line, *changes[line][:2]) for line in lines)
        message = (f"Your {evidence.part} is off: {said}. Compare that line with the computation the exercise "
                   "describes.")
    else:
        where = " and ".join(facts.quoted(line) for line in lines)
        message = f"{told.message} The difference from the exercise's computation is on {where}."
    return told.kind, message, {"finding": "changed_lines", "cause_lines": lines}


def _difference(facts: SourceFacts, line: int, missing: frozenset[str], added: frozenset[str]) -> str:
    """What one line of the student's computation does differently at that step (the ops of the exercise's
    closest step), in words true of the student's line."""
    where = facts.quoted(line)
    if missing and added:
        return (f"{where} uses {_ops_text(added)} where the exercise's computation uses {_ops_text(missing)} "
                "at that step")
    if missing:
        return f"{where} has no {_ops_text(missing)} where the exercise's computation has " + \
            ("one" if len(missing) == 1 else "them") + " at that step"
    if added:
        return f"{where} has {_ops_text(added)} that the exercise's computation does not have at that step"
    return f"{where} uses a number that differs from the exercise's computation"


def _ops_text(ops: frozenset[str]) -> str:
    return ", ".join(_OP_WORDS.get(op, op) for op in sorted(ops))


_OP_WORDS = {"mul": "multiplication (*)", "div": "division (/)", "add": "addition (+)", "sub": "subtraction (-)",
             "pow": "power (**)", "neg": "negation", "matmul": "matrix product (@)"}


def changed_lines(reference: StudentGraph, student: StudentGraph) -> dict[int, tuple[frozenset[str], frozenset[str],
                                                                                    frozenset[str]]]:
    """Lines of the student's graph whose set of ops no line of the reference's has, and for each reference
    line whose set of ops no student line has, the student's line that shares most of them: line → (ops the
    closest reference line has and it has not, ops it has and that line has not, its ops)."""
    theirs, mine = _signatures(reference), _signatures(student)
    if not theirs or not mine:
        return {}
    known = set(theirs.values())
    changed = {line for line, ops in mine.items() if ops not in known}
    unmatched = {line: ops for line, ops in mine.items() if ops not in known}  # lines equal to one are no candidates
    for ops in known - set(mine.values()):
        if not unmatched:
            break
        line, shared = max(unmatched.items(), key=lambda item: (len(_names(item[1]) & _names(ops)), -item[0]))
        if 2 * len(_names(shared) & _names(ops)) >= len(_names(ops)):
            changed.add(line)
    found = {}
    for line in changed:
        ops = mine[line]
        closest = max(known, key=lambda other: (len(other & ops), len(_names(other) & _names(ops)),
                                                -len(other ^ ops)))
        found[line] = (_names(closest) - _names(ops), _names(ops) - _names(closest), _names(ops))
    return found


def _signatures(graph: StudentGraph) -> dict[int, frozenset[str]]:
    """line → its ops, each with the Python number it takes ("mul 0.5"), as a set."""
    found: dict[int, set[str]] = {}
    for op in graph.ops:
        found.setdefault(op.line, set()).add(op.op if op.number is None else f"{op.op} {op.number:g}")
    return {line: frozenset(ops) for line, ops in found.items()}


def _names(ops: frozenset[str]) -> frozenset[str]:
    return frozenset(op.split(" ")[0] for op in ops)


def _unjudged_function(evidence: CodeEvidence, trace: ProgramTrace, told: Diagnosis) -> Finding | None:
    """The student's own Function, whose forward autograd cannot differentiate (a rounding), put where the
    exercise passes the gradient on another way: its backward decides the gradient, and it is wrong."""
    code = _code(told)  # a slip the numbers put on an op of the exercise's (a scale) may be this backward's too
    if told.kind not in ("unknown", "extra_path", "wrong_local_derivative") or (
            told.kind == "extra_path" and code.get("finding") != "no_cut"):
        return None
    fact = next((fact for fact in trace.graph.functions if fact.verdict == "not_judged"), None)
    found = _backward_lines(evidence, fact.name) if fact is not None else None
    if fact is None or found is None:
        return None
    source, lines = found
    message = (f"Your {fact.name}.backward ({evidence.facts.quoted(source.returns[-1])}) does not give the gradient "
               f"this exercise passes back through that step, and {evidence.part} is wrong at every point checked. "
               f"backward receives the gradient from above ({', '.join(source.grad_outputs) or 'grad_output'}) and "
               "returns the gradient for each input of forward: check what it multiplies it by.")
    return "custom_function", message, {"finding": "function_differs", "cause_lines": lines}


def _cut_lines(evidence: CodeEvidence, trace: ProgramTrace, told: Diagnosis) -> Finding | None:
    """No line yet, and the student's cuts are not the exercise's: a cut of another tensor is where the graph
    differs; the exercise's cut missing, the student's line that computes what the exercise's cut line does."""
    if told.kind in ("unknown", "correct") or cause_lines(told.detail) or evidence.reference is None:
        return None
    expected = evidence.reference.cuts()
    tensors = {op.tensor for op in expected}
    own = [op.line for op in trace.cuts() if op.line is not None and op.tensor not in tensors]
    if not own and expected and not trace.cuts():
        theirs, mine = _signatures(evidence.reference.graph), _signatures(trace.graph)
        wanted = {theirs[op.line] for op in expected if op.line in theirs}
        own = [line for line, ops in mine.items() if ops in wanted]
    lines = sorted(set(own))
    if not lines or len(lines) > 2:
        return None
    where = " and ".join(evidence.facts.quoted(line) for line in lines)
    return told.kind, f"{told.message} Look at {where}.", {**_code(told), "cause_lines": lines}


_SCALING = frozenset({"mul", "div", "mean", "sum"})


def _scaled_line(evidence: CodeEvidence, trace: ProgramTrace, told: Diagnosis) -> Finding | None:
    """No numeric hypothesis fits, and one line of the student's graph differs from the exercise's only by a
    scaling (a factor, a division, a mean for a sum): that line weights its term wrongly."""
    if told.kind != "unknown" or evidence.reference is None:
        return None
    changes = changed_lines(evidence.reference.graph, trace.graph)
    if len(changes) != 1:
        return None
    line, (missing, added, _) = next(iter(changes.items()))
    if not (missing | added) <= _SCALING:
        return None
    facts = evidence.facts
    said = _difference(facts, line, missing, added)
    message = (f"Your {evidence.part} is off by a weighting: {said}. Every gradient flowing through that term is "
               "scaled by it: check the factor (a mean divides by its own count; a weighted sum multiplies each "
               "term by its weight).")
    return "wrong_local_derivative", message, {"finding": "scaled_line", "cause_lines": [line]}


# --- ops ----------------------------------------------------------------------------------------

def _ops_differ(evidence: CodeEvidence, trace: ProgramTrace, told: Diagnosis) -> Finding | None:
    """An op the student's graph has that the exercise's has not, named at the student's line: a rounding
    that stops the gradient (when no numeric hypothesis fits), a sum where the exercise averages (whatever
    the numbers say: their words would name a mean or a division the student's program does not have)."""
    if evidence.reference is None or not evidence.reference.graph.ops or not trace.graph.ops:
        return None
    mine, theirs, facts = trace.graph, evidence.reference.graph, evidence.facts
    # a rounding the exercise does not have, or has only where it passes the gradient around it (a detach()
    # or a Function of its own) while the student's graph has nothing of that and fewer ops
    around = bool(evidence.reference.cuts() or theirs.functions) and not (trace.cuts() or mine.functions) \
        and not theirs.op_names <= mine.op_names
    stopped = next((op for op in mine.ops if op.op in ZERO_DERIVATIVE and (op.op not in theirs.op_names or around)),
                   None)
    if stopped is not None and told.kind in ("unknown", "extra_path", "missing_path"):
        message = (f"{capitalised(facts.quoted(stopped.line))} {_ROUNDING_WORDS[stopped.op]}: its derivative is zero "
                   f"wherever it exists, so autograd passes no gradient back through it. "
                   + ("This exercise passes the gradient around that step (a straight-through estimator: "
                      "x + (round(x) - x).detach(), or a torch.autograd.Function with a backward of its own)."
                      if around or theirs.functions else "This exercise's program does not use it."))
        return "missing_path", message, {"finding": "zero_derivative_op", "op": stopped.op,
                                         "cause_lines": [stopped.line]}
    scale = _scale(evidence)
    averages = {"mean", "div"} & theirs.op_names
    if averages and not {"mean", "div"} & mine.op_names and mine.op_lines("sum") and scale is not None:
        line = mine.op_lines("sum")[-1]
        message = (f"Your loss is not divided by the number of items: {facts.quoted(line)} sums them, where this "
                   f"exercise averages them (a mean, or a division by N), so every gradient is {scale:g} times too "
                   "large. Divide the sum by the number of items, or take the mean.")
        return "wrong_local_derivative", message, {"finding": "not_averaged", "scale": scale, "cause_lines": [line]}
    return None


def _scale(evidence: CodeEvidence) -> int | None:
    """The whole number ≥ 2 the student's value is the exercise's times, at the first point (else None)."""
    reference = evidence.analysis.parts.get(evidence.part) if evidence.analysis is not None else None
    if reference is None or not evidence.answers or evidence.answers[0] is None or reference.value is None:
        return None
    mine, right = flatten(evidence.answers[0]), flatten(reference.value)
    ratios = [a / b for a, b in zip(mine, right, strict=False) if abs(b) > 1e-9]
    if len(mine) != len(right) or not ratios or any(abs(a) > 1e-9 for a, b in zip(mine, right, strict=True)
                                                    if abs(b) <= 1e-9):
        return None
    scale = round(ratios[0])
    return scale if scale >= 2 and all(abs(ratio - scale) <= 1e-3 * scale for ratio in ratios) else None


def capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


# --- errors at their cause ----------------------------------------------------------------------

def _leaf_remade(facts: SourceFacts, error: str) -> Finding | None:
    """`w = w - lr * w.grad` outside no_grad: w is now the result of an operation, whose .grad is None."""
    line, name = _remade(facts)
    if line is None:
        return None
    message = (f"{error}. The cause is {facts.quoted(line)}: it makes {name} the result of an operation, not a leaf, "
               f"so the next backward() leaves {name}.grad None. Update the leaf in place inside "
               f"`with torch.no_grad():` ({name} -= …), or make a new leaf with .detach().requires_grad_().")
    return "untracked_leaf", message, {"finding": "leaf_remade", "tensor": name, "cause_lines": [line]}


def _remade(facts: SourceFacts) -> tuple[int | None, str]:
    try:
        tree = ast.parse("\n".join(facts.lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None, ""
    guarded = {node.lineno for block in ast.walk(tree) if isinstance(block, ast.With) and "no_grad" in
               ast.unparse(block.items[0].context_expr) for node in ast.walk(block) if isinstance(node, ast.stmt)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name) \
                or node.lineno in guarded:
            continue
        name = node.targets[0].id
        uses_grad = any(isinstance(inner, ast.Attribute) and inner.attr == "grad" and isinstance(inner.value, ast.Name)
                        and inner.value.id == name for inner in ast.walk(node.value))
        if uses_grad and "detach" not in ast.unparse(node.value):
            return node.lineno, name
    return None, ""


def _cut_leaf(trace: ProgramTrace, facts: SourceFacts, error: str) -> Finding | None:
    """`.data` or detach() of a tracked leaf in the forward pass: its .grad stays None and code that uses it
    fails later (a TypeError on None)."""
    leaves = {name for name, leaf in trace.leaves.items() if leaf.is_leaf and leaf.requires_grad}
    cut = next((op for op in trace.cuts() if op.tensor in leaves and op.line is not None
                and op.line not in facts.data_writes), None)
    if cut is None or cut.line is None:
        return None
    how = {"data": ".data", "detach": "detach()"}.get(cut.op, "torch.no_grad()")
    message = (f"{error}. The cause is {facts.quoted(cut.line)}: {how} takes {cut.tensor}'s values without its "
               f"graph, so no gradient reaches {cut.tensor} and {cut.tensor}.grad stays None. Use {cut.tensor} "
               "itself in the computation.")
    return "missing_path", message, {"finding": "cut_leaf", "cause_lines": [cut.line]}


FINDERS: tuple[Callable[[CodeEvidence, ProgramTrace, Diagnosis], Finding | None], ...] = (
    _custom_function, _higher_order, _hooks, _extra_cut, _seed_differs, _ops_differ, _unjudged_function,
    _constant_made, _accumulation_lines, _changed_lines, _cut_lines, _scaled_line,
)
