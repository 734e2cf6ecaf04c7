"""Messages for the slips: one edge's wrong local derivative,
a kink ignored, accumulation beliefs, two mistakes at once."""

from __future__ import annotations

from chainrule.diagnosis.message_context import (
    KIND_SUMMARY,
    PATH_CLAUSES,
    FeedbackContext,
    paths_text,
    with_value,
)
from chainrule.diagnosis.rule_messages import rule_message
from chainrule.model import Hypothesis


def edge_words(detail: dict[str, object]) -> str:
    """"pow with respect to h (the edge add → pow)": the student's name for the input,
    then the edge in the path notation; a placeholder name says what it stands for."""
    edge = detail.get("edge") if isinstance(detail.get("edge"), list) else ["?", "?"]
    source, op = edge[0], edge[1]  # type: ignore[index]
    label = detail.get("label") or source
    note = f"{detail['label_note']}; " if detail.get("label_note") else ""
    return f"{op} with respect to {label} ({note}the edge {source} → {op})"


def wrong_local_derivative_message(h: Hypothesis, c: FeedbackContext) -> str:
    detail = h.detail
    if detail.get("everywhere"):
        return rule_message(h, c)
    used = with_value(detail.get("used"), detail.get("used_value"))
    right = with_value(detail.get("right"), detail.get("right_value"))
    along = f" along {paths_text(h.paths)}" if h.paths else ""
    text = (f"Your {c.part} uses {used} as the local derivative of {edge_words(detail)}, "
            f"where the right one is {right}.")
    lesson = detail.get("lesson")
    if lesson:
        text += f" The rule: {lesson}."
    return text + f" Redo the product{along} with that factor."


KINK_RULES = {
    "relu": "relu passes no gradient where its input is negative",
    "leaky_relu": "leaky_relu scales the gradient by its negative slope where its input is negative",
    "clamp": "clamp passes no gradient where the input lies outside the bounds",
    "clamp_min": "clamp passes no gradient where the input lies below the bound",
    "clamp_max": "clamp passes no gradient where the input lies above the bound",
    "abs": "abs has slope -1 where its input is negative and +1 where it is positive",
    "maximum": "maximum(a, b) passes the gradient only to the larger operand",
    "minimum": "minimum(a, b) passes the gradient only to the smaller operand",
    "max": "max passes the gradient only to the entry that wins",
    "min": "min passes the gradient only to the entry that wins",
    "where": "where(cond, a, b) passes the gradient to a where cond holds and to b elsewhere",
    "masked_fill": "masked_fill passes no gradient to the entries it fills",
}


def kinks_ignored_message(h: Hypothesis, c: FeedbackContext) -> str:
    kinks = [str(kink) for kink in h.detail.get("kinks", [])]
    names = " and ".join(kinks) or "the kink"
    rules = "; ".join(KINK_RULES.get(kink, f"{kink} has a kink") for kink in kinks)
    where = paths_text(h.paths) if h.paths else "the way to " + c.output
    if h.detail.get("slopes") == "kinks_both":
        return (f"Your {c.part} is what you get by treating {names} on {where} as if it were not there, in the "
                f"forward pass as well as the backward pass. The forward values after {names} are what it really "
                f"outputs, and its local derivative depends on which side of the kink each entry is: {rules}.")
    return (f"Your {c.part} passes the gradient through {names} on {where} as if its slope were 1 everywhere. "
            f"The local derivative of a kinked op depends on which side of the kink each entry is: {rules}.")


ACCUMULATION_RULE = ".grad accumulates across backward calls: each call adds its gradient to what is already there."


def belief_message(h: Hypothesis, c: FeedbackContext) -> str:
    belief, calls = h.detail.get("belief"), h.detail.get("calls")
    leaf = f"{c.tensor}.grad"
    told = {
        "last_only": f"keeps only the last backward call, as if each call overwrote {leaf}",
        "averaged": f"averages the {h.detail.get('counted')} backward calls",
        "first_only": "keeps only the first backward call",
        "doubled": "counts one backward call twice",
        "retained_replayed": f"counts backward call {h.detail.get('call')} twice, as if the graph it kept with "
                             "retain_graph=True were run again by the next backward call",
        "total_doubled": "counts the whole accumulated gradient twice",
        "cleared": f"reads zero_() as clearing {leaf} after the backward call, leaving nothing",
        "zeroed_before": f"sums the calls from call {h.detail.get('from_call')} on, as if {leaf} were zeroed "
                         "just before it" if h.detail.get("from_call") != 1 else
                         f"sums all {calls} backward calls, as if {leaf} were never zeroed",
    }.get(str(belief), "miscounts the backward calls")
    since = h.detail.get("program_from", 1)
    counting = "only the last call counts" if since == calls else f"only calls {since} to {calls} count"
    zeroed = (f" and zeroes {leaf} just before call {since}, so {counting}"
              if isinstance(since, int) and since > 1 else " and never zeroes " + leaf)
    retained = (" retain_graph=True only keeps the graph's buffers for another backward call through it; that "
                "call computes its own output's gradient and never repeats the earlier one."
                if belief == "retained_replayed" else "")
    # "But": the belief, then what the exercise's program does ("keeps only the first … only the last call
    # counts" read as one message contradicting itself)
    return (f"Your {c.part} {told}. But this exercise's program calls backward() {calls} times{zeroed}. "
            f"{ACCUMULATION_RULE}"
            f"{retained} Only zero_() (or setting .grad to None) starts the sum again, exactly where the program "
            "does it.")


def mistake_clause(item: dict[str, object]) -> str:
    kind = item.get("kind")
    paths = item.get("paths") if isinstance(item.get("paths"), list) else []
    where = paths_text(paths) if paths else "its path"  # type: ignore[arg-type]
    if kind == "wrong_local_derivative":
        return (f"it uses {item.get('used')} as the local derivative of {edge_words(item)}, where the right one "
                f"is {item.get('right')} ({item.get('lesson')})")
    if kind == "dead_branch":
        return f"it lets gradient through the kink on {where} as if its slope were 1"
    if kind == "extra_path" and item.get("reason") == "detach":
        return "it " + PATH_CLAUSES["cut_path"](where, item)
    clause = PATH_CLAUSES.get(str(kind))
    return "it " + clause(where, item) if clause else f"it makes a {KIND_SUMMARY.get(str(kind), kind)} slip"


def two_mistakes_message(h: Hypothesis, c: FeedbackContext) -> str:
    items = [item for item in h.detail.get("mistakes", []) if isinstance(item, dict)]
    clauses = [mistake_clause(item) for item in items]
    numbered = "; and ".join(f"({index}) {clause}" for index, clause in enumerate(clauses, start=1))
    return (f"No single mistake explains your {c.part}, but two together do: {numbered}. "
            "Fix them one at a time and check each factor along the path.")
