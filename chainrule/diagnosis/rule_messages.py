"""The words of a misconception held as a rule (chainrule.analysis.mutations.rules): one wrong rule
for an op used at every node of that op, told once, with how many nodes it was used at."""

from __future__ import annotations

from chainrule.diagnosis.message_context import FeedbackContext
from chainrule.model import Hypothesis

_COUNTS = {2: "both", 3: "all three", 4: "all four"}


def rule_message(h: Hypothesis, c: FeedbackContext) -> str:
    detail = h.detail
    op, count = detail.get("op", "the op"), int(detail.get("everywhere", 2))
    edges = [edge for edge in detail.get("rule_edges", []) if isinstance(edge, list) and len(edge) == 2]
    named = " and ".join(f"{source} → {target}" for source, target in edges[:4])
    at = f"at {_COUNTS.get(count, f'all {count}')} of the {op} nodes of the program"
    edges_text = f" (the edges {named}{', …' if len(edges) > 4 else ''})" if named else ""
    lesson = f" The rule: {detail['lesson']}." if detail.get("lesson") else ""
    return (f"Your {c.part} uses {detail.get('used_rule')} for the local derivative of {op}(u), {at}{edges_text}, "
            f"where the right one is {detail.get('right_rule')}. It is one belief about {op}′, used wherever {op} "
            f"appears.{lesson} Correct the rule and redo the product at every {op}.")
