"""The words of code-part findings (chainrule.answers.code_comparison): each names the student's
own lines, quoted from the worker's copy of the source, says what that line does to autograd and
the rule to learn. They describe the exercise's program only by what it does, never by its code."""

from __future__ import annotations

from chainrule.answers.source_facts import SourceFacts
from chainrule.answers.trace_report import BackwardSite, GradReset, TraceOp
from chainrule.diagnosis.message_context import path_text

ACCUMULATION_RULE = ".grad accumulates: each backward() adds its gradient to what is already in .grad"
_CUT_WORDS = {"detach": "detach()", "data": ".data", "no_grad": "torch.no_grad()"}
_RESET_WORDS = {"zero_": "zeroes {t}.grad", "set_none": "sets {t}.grad to None", "assigned": "replaces {t}.grad"}


def capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def times(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


def lines_text(sites: list[BackwardSite]) -> str:
    lines = [site.line for site in sites if site.line is not None]
    distinct = list(dict.fromkeys(lines))
    if not distinct:
        return "in your code"
    if len(distinct) == 1:
        return f"line {distinct[0]}" + (", in a loop" if len(lines) > 1 else "")
    return "lines " + ", ".join(map(str, distinct[:-1])) + f" and {distinct[-1]}"


def not_autograd(key: str, how: str, line: int | None, facts: SourceFacts, output: str) -> str:
    tensor = key.removesuffix(".grad")
    lesson = (f"This part grades the gradient autograd stores: compute {output} from {tensor} and call "
              "backward(); numbers put in .grad by hand earn nothing here, even right ones.")
    if how == "no_backward":
        where = f": it is assigned by hand on {facts.quoted(line)}" if line is not None else ""
        return f"Your code never calls backward(), so {key} was not computed by autograd{where}. {lesson}"
    if how == "added_to":
        return (f"{key} starts from numbers put there by hand on {facts.quoted(line)}, and backward() adds to "
                f"them, so it is not the gradient autograd computes. Let backward() fill an empty .grad. {lesson}")
    if how in ("assigned", "set_none"):
        return f"{key} was assigned by hand on {facts.quoted(line)}, not computed by autograd. {lesson}"
    return (f"{key} was changed by hand on {facts.quoted(line)} ({how}) after backward() computed it, so it is no "
            f"longer the gradient autograd computed. {lesson}")


def never_backward(tensor: str, output: str) -> str:
    return (f"Your program never calls backward(), so autograd never fills {tensor}.grad: it stays None. "
            f"Call backward() on {output} once it is computed from {tensor}.")


def zeroed_between(tensor: str, reset: GradReset, sites: list[BackwardSite], counted: int,
                   facts: SourceFacts) -> str:
    before = [site for site in sites if site.line is not None]
    around = f" between the backward() calls on {lines_text(before)}" if len(before) >= 2 else \
        " between backward() calls"
    kept = "the last call's gradient" if counted == 1 else f"the gradients of the last {counted} calls"
    if reset.how == "new_tensor":
        what = (f"Your program makes a new tensor {tensor} before backward() call {reset.before_call}, so its .grad "
                f"starts empty and keeps only {kept}")
    else:
        verb = _RESET_WORDS.get(reset.how, "changes {t}.grad").format(t=tensor)
        what = f"{capitalised(facts.quoted(reset.line))} {verb}{around}, so {tensor}.grad keeps only {kept}"
    return f"{what}. {ACCUMULATION_RULE}, and this exercise counts every call: remove the reset."


def never_reset(tensor: str, sites: list[BackwardSite], calls: int, counted: int) -> str:
    last = "the last call counts" if counted == 1 else f"the last {counted} calls count"
    return (f"Your program never resets {tensor}.grad between its {calls} backward() calls ({lines_text(sites)}), "
            f"so {tensor}.grad holds the sum of all {calls}. {ACCUMULATION_RULE}; in this exercise .grad is reset "
            f"(zero_(), `= None` or optimizer.zero_grad()) so that only {last}.")


def reset_after_last(tensor: str, reset: GradReset, expected: int, exercise_resets: bool,
                     facts: SourceFacts) -> str:
    counts = "only the last call counts" if expected == 1 else f"the last {expected} calls count"
    where = f"the reset comes between the calls, so that {counts}" if exercise_resets else \
        f"nothing resets it, so {tensor}.grad keeps the sum of the calls"
    return (f"{capitalised(facts.quoted(reset.line))} resets {tensor}.grad after the last backward() call, so it "
            f"ends with no gradient in it; in this exercise {where}. {ACCUMULATION_RULE}.")


def reset_elsewhere(tensor: str, reset: GradReset, counted: int, expected: int, facts: SourceFacts) -> str:
    theirs = "only the last one" if expected == 1 else f"the last {expected}"
    yours = "only the last call counts" if counted == 1 else f"the last {counted} calls count"
    return (f"{capitalised(facts.quoted(reset.line))} resets {tensor}.grad before backward() call "
            f"{reset.before_call}, so {yours}; in this exercise {theirs} should. {ACCUMULATION_RULE}.")


def call_count(tensor: str, sites: list[BackwardSite], calls: int, expected: int, expected_counted: int) -> str:
    if expected_counted < expected:  # the exercise zeroes between its calls (a training loop's steps)
        kept = "the last call's gradient" if expected_counted == 1 else f"the last {expected_counted} calls' gradients"
        return (f"Your program calls backward() {times(calls)} ({lines_text(sites)}), but this exercise calls it "
                f"{times(expected)}, zeroing {tensor}.grad in between: {tensor}.grad holds {kept}, taken where the "
                "earlier steps left the values. Take every step the exercise asks for, each with its own backward().")
    if calls < expected:
        keep = " (retain_graph=True on every call but the last keeps the graph for the next one)"
        return (f"Your program calls backward() {times(calls)} ({lines_text(sites)}), but this exercise calls it "
                f"{times(expected)}: {ACCUMULATION_RULE}, so {tensor}.grad holds the sum of {expected} calls{keep}.")
    return (f"Your program calls backward() {times(calls)} ({lines_text(sites)}), but this exercise calls it "
            f"{times(expected)}: every call adds its gradient to {tensor}.grad, so the extra calls are counted too.")


def cloned(clone: TraceOp, paths: list[list[str]], facts: SourceFacts) -> str:
    source = clone.tensor or "the tensor"
    copy = clone.result or "the copy"
    along = f" along {_paths(paths, 'clone')}" if paths else ""
    return (f"{capitalised(facts.quoted(clone.line))}: clone() copies {source} but keeps its graph, so the "
            f"gradient still flows back through {copy}{along}. A frozen copy needs detach(): a detached tensor is "
            f"a constant to autograd. Use {source}.detach() (then .clone() if you need a separate copy).")


def not_cut(frozen: str | None, paths: list[list[str]], facts: SourceFacts, line: int | None) -> str:
    where = f" On {facts.quoted(line)}, {frozen}" if frozen and line is not None else " The tensor to freeze"
    along = f" along {_paths(paths, None)}" if paths else ""
    return (f"Nothing in your program cuts the gradient: it has no detach(), .data or torch.no_grad(), so the "
            f"gradient flows back{along}.{where} still carries gradient; a detached tensor is a constant to "
            "autograd: its value flows forward, no gradient flows back through it.")


def detach_discarded(line: int, tensor: str, paths: list[list[str]], facts: SourceFacts) -> str:
    along = f" along {_paths(paths, None)}" if paths else ""
    return (f"{capitalised(facts.quoted(line))} makes a detached copy of {tensor} and throws it away: detach() "
            f"returns a new tensor and leaves {tensor} itself as it was, so {tensor} still carries gradient"
            f"{along}. Keep the copy: {tensor} = {tensor}.detach().")


def extra_cut(cut: TraceOp, tensor: str, paths: list[list[str]], facts: SourceFacts) -> str:
    words = _CUT_WORDS.get(cut.op, cut.op)
    source = cut.tensor or "the tensor"
    made = cut.result or f"that copy of {source}"
    along = _paths(paths, None) if paths else f"that path to {tensor}"
    fix = f"compute {made} outside torch.no_grad()" if cut.op == "no_grad" else f"use {source} itself there"
    return (f"{capitalised(facts.quoted(cut.line))} cuts the gradient: {words} makes {made} a constant to "
            f"autograd, so {along} carries no gradient back to {tensor} in your program. This exercise keeps that "
            f"path: {fix}.")


def data_written(line: int, tensor: str, rewrite: str, facts: SourceFacts) -> str:
    """`v.data -= t`: the path is not cut (v stays in the graph); its values change where autograd cannot
    see, so an op that saved them (a product its inputs, tanh its output) computes its backward from the
    changed numbers."""
    instead = f"compute it as a new tensor (`d = {rewrite}`) and use that from there on" if rewrite else \
        "compute the changed values as a new tensor instead of writing into .data"
    return (f"{capitalised(facts.quoted(line))} changes {tensor}'s values behind autograd's back: autograd does not "
            f"record the change, so backward() treats {tensor} as if it were unchanged, and an op that saved "
            f"{tensor} for its backward (a product or a power saves its inputs, exp and tanh their outputs) reads "
            "the changed numbers where it needs the originals. The gradient "
            f"comes out wrong. Do not write into .data: {instead}.")


def tracked_wrongly(tensor: str, tracked: bool, line: int | None, switched: bool, facts: SourceFacts) -> str:
    rule = "None means never tracked; 0 would mean tracked with zero slope."
    if tracked:
        how = "switches requires_grad on for" if switched else "creates"
        made = f"{capitalised(facts.quoted(line))} {how} {tensor}" + ("" if switched else " with requires_grad=True")
        return (f"{made}, so autograd tracks it and backward() stores a gradient in {tensor}.grad. In this exercise "
                f"{tensor} is not tracked: its .grad stays None. {rule}")
    return (f"{tensor} is not tracked in your program: {facts.quoted(line)} creates it without requires_grad=True, "
            f"so autograd records nothing for it and {tensor}.grad stays None. Create it with requires_grad=True. "
            f"{rule}")


SEED_RULE = "The seed is the gradient the backward pass starts from"


def seed_left_out(site: BackwardSite, seeded: BackwardSite, facts: SourceFacts) -> str:
    output = seeded.output or "the output"
    return (f"{capitalised(facts.quoted(site.line))} calls backward() without a seed, where this exercise seeds "
            f"{output}'s backward() with a vector of its own. {SEED_RULE}: "
            f"a reduction first (a mean or a sum of {output}) starts it from 1/N or 1 on every entry instead, which "
            "weights every entry alike. Pass the exercise's seed: backward(v).")


def stale_graph(kept: BackwardSite, again: BackwardSite, facts: SourceFacts) -> str:
    output = kept.output or "the output"
    return (f"{capitalised(facts.quoted(again.line))} calls backward() again on the {output} that "
            f"{facts.quoted(kept.line)} already used, through the graph retain_graph=True kept: it gives the gradient "
            f"at the values {output} was computed from then, not at the values the program has now. Compute {output} "
            "again (after the update) before each backward(), as this exercise does; then no retain_graph is needed.")


def own_seed(site: BackwardSite, facts: SourceFacts) -> str:
    return (f"{capitalised(facts.quoted(site.line))} passes backward() a seed of its own. {SEED_RULE}, and it "
            "multiplies every gradient: a scalar's backward() starts from 1 (call it with no argument), as this "
            "exercise does.")


NO_GRAPH = (" The tensor backward() was called on has no graph: nothing it is computed from requires grad "
            "(create the leaf with requires_grad=True, and compute outside torch.no_grad()).")


def graph_cut_before_backward(cut: TraceOp, facts: SourceFacts) -> str:
    if cut.op == "no_grad":
        return (f" The cause is {facts.quoted(cut.line)}: under torch.no_grad() autograd records nothing, so the "
                "tensor backward() was called on has no graph. Compute it outside the no_grad block.")
    made = cut.result or (f"that copy of {cut.tensor}" if cut.tensor else "its result")
    return (f" The cause is {facts.quoted(cut.line)}: {_CUT_WORDS.get(cut.op, cut.op)} makes {made} a constant to "
            "autograd, and the tensor backward() was called on is computed from it, so it has no graph.")


def tracked_too_late(line: int, facts: SourceFacts) -> str:
    return (f" The cause is {facts.quoted(line)}: requires_grad is switched on after the computation, which was "
            "recorded without it. Set requires_grad=True where the leaf is created, before computing from it.")


def common_error_hint(message: str) -> str:
    """A sentence for the autograd errors beginners meet most, where no line of theirs is the cause."""
    if "'NoneType' object has no attribute" in message and ("zero_" in message or "grad" in message):
        return (" A .grad is None until the first backward() fills it: zero it after a backward() (or use "
                "optimizer.zero_grad(), which handles None).")
    if "a leaf Variable that requires grad is being used in an in-place operation" in message:
        return (" Update a leaf's values inside `with torch.no_grad():` (or let an optimizer's step() do it): "
                "autograd refuses to record an in-place change of a leaf it tracks.")
    return ""


def not_reached(tensor: str, output: str, backward_line: int | None, line: int | None, facts: SourceFacts) -> str:
    where = f" The graph stops at {facts.quoted(line)}:" if line is not None else ""
    called = f"the backward() on {facts.quoted(backward_line)}" if backward_line is not None else "backward()"
    return (f"In your program no gradient reaches {tensor}, so {tensor}.grad stays None: {called} runs, but "
            f"{output} is not computed from {tensor} by torch operations.{where} a Python number (.item(), "
            "float(), math.sin) or a new torch.tensor(...) made from a value is a constant to autograd. Keep the "
            f"computation in torch operations on {tensor} (torch.sin, not math.sin).")


def not_a_leaf(tensor: str, line: int | None, facts: SourceFacts) -> str:
    return (f"{capitalised(facts.quoted(line))} makes {tensor} the result of an operation, not a leaf: autograd "
            f"keeps .grad only for leaves, so {tensor}.grad stays None. Create {tensor} itself with "
            "requires_grad=True and compute from it.")


def graph_freed(freeing: BackwardSite, failing: int | None, facts: SourceFacts) -> str:
    again = f" on line {failing}" if failing is not None else ""
    return (f" The backward() on {facts.quoted(freeing.line)} freed the graph's saved values: pass "
            f"retain_graph=True there so that the backward(){again} can run through the graph again.")


def changed_in_place(change: TraceOp, facts: SourceFacts) -> str:
    tensor = change.tensor or "a tensor"
    return (f" The cause is {facts.quoted(change.line)}: {change.name} changes {tensor} in place after autograd "
            f"saved it for the backward pass. Compute a new tensor instead ({tensor} = … rather than "
            f"{tensor}.{change.name}(…) or {tensor} op= …).")


def _paths(paths: list[list[str]], cut_as: str | None) -> str:
    """The student's own paths: the exercise's detach node shown as what the student wrote instead."""
    own = [[cut_as if cut_as and name == "detach" else name for name in path if cut_as or name != "detach"]
           for path in paths]
    return " and ".join(path_text(path) for path in own)
