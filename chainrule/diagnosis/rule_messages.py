"""The words of a misconception held as a rule (chainrule.analysis.mutations.rules): one wrong rule
for an op used at every node of that op, told once, with how many nodes it was used at."""

from __future__ import annotations

from chainrule.diagnosis.message_context import FeedbackContext
from chainrule.model import Hypothesis

_COUNTS = {2: "both", 3: "all three", 4: "all four"}


def rule_message(h: Hypothesis, c: FeedbackContext) -> str:
    detail = h.detail
    op, count = detail.get("op", "the op"), int(detail.get("everywhere", 2))
    edges = list(dict.fromkeys(f"{edge[0]} → {edge[1]}" for edge in detail.get("rule_edges", [])
                               if isinstance(edge, list) and len(edge) == 2))
    named = ""
    if len(edges) == 1:
        named = f" (the edge {edges[0]} at each)"
    elif edges:
        named = f" (the edges {' and '.join(edges[:4])}{', …' if len(edges) > 4 else ''})"
    at = f"at {_COUNTS.get(count, f'all {count}')} of the {op} nodes of the program"
    lesson = f" The rule: {detail['lesson']}." if detail.get("lesson") else ""
    return (f"Your {c.part} uses {detail.get('used')} as the local derivative of {op}, {at}{named}, where the right "
            f"one is {detail.get('right')}. It is one belief about the rule for {op}, used wherever {op} appears."
            f"{lesson} Correct the rule and redo the product at every {op}.")
