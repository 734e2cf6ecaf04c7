"""The student's lines where a raised error's cause is, for the result document's `lines`: the
backward() that freed the graph a later one needed, the in-place op that changed a saved tensor, the
cut that left backward() no graph (with the `with torch.no_grad():` that made it one), the creation of a
tensor torch.autograd.grad was asked to differentiate by but that is not tracked (the causes
code_comparison.explained_failure names), else the line the error was raised at."""

from __future__ import annotations

import ast

from chainrule.answers.code_report import PointOutput
from chainrule.answers.source_facts import SourceFacts


def failure_lines(point: PointOutput, facts: SourceFacts) -> list[int]:
    raised, trace = point.raised, point.trace
    if raised is None:
        return []
    causes: list[int] = []
    if trace is not None:
        if "backward through the graph a second time" in raised.message:
            freeing = [site.line for site in trace.backward[:-1] if not site.retain_graph and site.line]
            causes = freeing[-1:]
        elif "modified by an inplace operation" in raised.message:
            causes = [op.line for op in trace.ops if op.op == "in_place" and op.line][-1:]
        elif "does not require grad and does not have a grad_fn" in raised.message:
            # every cut recorded ran before the raise that ended the program (in a loop, at a later line:
            # `w = w - lr * w.grad` under no_grad on line 10 leaves the backward of line 8 no graph)
            cuts = [op for op in trace.cuts() if op.line is not None]
            switched = [leaf.switched for leaf in trace.leaves.values() if leaf.switched is not None]
            if cuts:
                line = cuts[-1].line
                causes = [*_no_grad_blocks(facts, line), line] if cuts[-1].op == "no_grad" and line else [line or 0]
            elif switched:
                causes = switched[:1]
    if not causes and "differentiated Tensors does not require grad" in raised.message:
        causes = _untracked_inputs(facts, raised.line)
    found = sorted({line for line in causes if line})
    return found or ([raised.line] if raised.line else [])


def _tree(facts: SourceFacts) -> ast.Module | None:
    try:
        return ast.parse("\n".join(facts.lines))
    except (SyntaxError, ValueError, RecursionError):
        return None


def _no_grad_blocks(facts: SourceFacts, line: int) -> list[int]:
    """The `with torch.no_grad():` lines around `line`."""
    tree = _tree(facts)
    if tree is None:
        return []
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.With)
            and any("no_grad" in ast.unparse(item.context_expr) for item in node.items)
            and node.lineno < line <= (node.end_lineno or node.lineno)]


def _untracked_inputs(facts: SourceFacts, line: int | None) -> list[int]:
    """Where the tensors torch.autograd.grad differentiates by were last made before its call."""
    tree = _tree(facts)
    if tree is None or line is None:
        return []
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and node.lineno == line
             and ast.unparse(node.func).endswith("grad") and len(node.args) >= 2]
    if not calls:
        return []
    inputs = calls[0].args[1]
    names = [item.id for item in (inputs.elts if isinstance(inputs, (ast.Tuple, ast.List)) else [inputs])
             if isinstance(item, ast.Name)]
    return [max(made) for name in names if (made := [n for n in facts.assignments.get(name, ()) if n < line])]
