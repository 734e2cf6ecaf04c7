"""The student's lines where a raised error's cause is, for the result document's `lines`: the
backward() that freed the graph a later one needed, the in-place op that changed a saved tensor, the
cut that left backward() no graph (the same causes code_comparison.explained_failure names), else the
line the error was raised at."""

from __future__ import annotations

from chainrule.answers.code_report import PointOutput


def failure_lines(point: PointOutput) -> list[int]:
    raised, trace = point.raised, point.trace
    if raised is None:
        return []
    cause: int | None = None
    if trace is not None:
        if "backward through the graph a second time" in raised.message:
            freeing = [site.line for site in trace.backward[:-1] if not site.retain_graph]
            cause = freeing[-1] if freeing else None
        elif "modified by an inplace operation" in raised.message:
            changes = [op.line for op in trace.ops if op.op == "in_place"]
            cause = changes[-1] if changes else None
        elif "does not require grad and does not have a grad_fn" in raised.message:
            # every cut recorded ran before the raise that ended the program (in a loop, at a later line:
            # `w = w - lr * w.grad` under no_grad on line 10 leaves the backward of line 8 no graph)
            cuts = [op.line for op in trace.cuts() if op.line is not None]
            switched = [leaf.switched for leaf in trace.leaves.values() if leaf.switched is not None]
            cause = cuts[-1] if cuts else switched[0] if switched else None
    line = cause or raised.line
    return [line] if line else []
