"""Plain-language feedback, one message per kind of mistake. Each names the
path(s) in SPEC notation (x → mul → add → z) and states the rule to learn.
Messages never contain the expected value: students read them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from chainrule.model import Hypothesis
from chainrule.values import Shape, format_shape, format_value

KIND_SUMMARY = {
    "missing_path": "leaving out a path",
    "extra_path": "counting a path that detach() cuts",
    "product_of_paths": "multiplying parallel paths instead of adding them",
    "sign_error": "a flipped sign",
    "dead_branch": "a wrong slope at a kink (ReLU, clamp, abs, max, where)",
    "accumulation": "miscounting the backward calls",
    "untracked_leaf": "mixing up None and 0",
    "shape": "a wrong shape",
    "seed_vector": "a wrong seed vector",
    "forward_value": "giving a forward value instead of a gradient",
    "wrong_local_derivative": "a wrong local derivative",
    "combination": "several slips on different paths",
    "two_mistakes": "two slips at once",
}

ADD_RULE = "multiply the local derivatives along each path, and add the paths: parallel paths into one node add"
SERIES_RULE = "multiply the local derivatives along the path, edge by edge"


def chain_rule(paths: int) -> str:
    """The rule to recall: parallel paths only where the leaf has several."""
    return ADD_RULE if paths >= 2 else SERIES_RULE


@dataclass
class FeedbackContext:
    part: str
    tensor: str  # the leaf whose gradient the part asks for
    outputs: list[str]  # what backward() was called on
    leaf_paths: list[list[str]] = field(default_factory=list)
    expected_shape: Shape | None = None
    answer_shape: Shape | None = None

    @property
    def output(self) -> str:
        return " and ".join(dict.fromkeys(self.outputs)) or "the output"


def path_text(names: list[str]) -> str:
    return " → ".join(names)


def paths_text(paths: list[list[str]]) -> str:
    texts = [path_text(path) for path in paths]
    if not texts:
        return "the graph"
    return texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " and " + texts[-1]


def _missing_path(h: Hypothesis, c: FeedbackContext) -> str:
    noun = "path" if len(h.paths) == 1 else "paths"
    return (f"Your {c.part} leaves out the {noun} {paths_text(h.paths)}. {c.tensor} reaches {c.output} "
            f"along {len(c.leaf_paths)} paths, and parallel paths into one node add: the gradient is "
            "the sum of the contributions of every path.")


def _extra_path(h: Hypothesis, c: FeedbackContext) -> str:
    noun = "path" if len(h.paths) == 1 else "paths"
    if h.detail.get("reason") == "counted":
        return (f"Your {c.part} counts the {noun} {paths_text(h.paths)} {times_text(h.detail.get('times'))}. "
                f"Each path from {c.tensor} to {c.output} contributes once: {chain_rule(len(c.leaf_paths))}.")
    return (f"Your {c.part} also counts the {noun} {paths_text(h.paths)}, which runs through detach(). "
            "A detached tensor is a constant to autograd: its value flows forward, but no gradient "
            "flows back through it, so that path contributes nothing.")


def _product_of_paths(h: Hypothesis, c: FeedbackContext) -> str:
    return (f"Your {c.part} multiplies the parallel paths {paths_text(h.paths)}. Parallel paths into one "
            "node add: multiply the local derivatives along one path (in series), then add the paths.")


def _sign_error(h: Hypothesis, c: FeedbackContext) -> str:
    if h.detail.get("whole"):
        return (f"Your {c.part} has the right size but the wrong sign. Carry every sign along "
                f"{paths_text(h.paths)}: a subtraction or a negative slope makes a factor negative.")
    names = h.paths[0]
    hint = " (sub passes −1 to the tensor being subtracted)" if {"sub", "neg"} & set(names) else ""
    return (f"Your {c.part} has the sign of the path {path_text(names)} flipped. Keep each local "
            f"derivative's sign in the product along the path{hint}, then add the paths.")


KINK_RULES = {
    "relu": "relu passes no gradient where its input is negative",
    "leaky_relu": "leaky_relu scales the gradient by its negative slope where its input is negative",
    "clamp": "clamp passes no gradient where the input lies outside the bounds",
    "clamp_min": "clamp passes no gradient where the input lies below the bound",
    "clamp_max": "clamp passes no gradient where the input lies above the bound",
    "abs": "|u| has slope -1 where u is negative",
    "maximum": "maximum(a, b) passes the gradient only to the larger operand",
    "minimum": "minimum(a, b) passes the gradient only to the smaller operand",
    "max": "max passes the gradient only to the entry that wins",
    "min": "min passes the gradient only to the entry that wins",
    "where": "where(cond, a, b) passes the gradient to a where cond holds and to b elsewhere",
}


def _kinks_ignored(h: Hypothesis, c: FeedbackContext) -> str:
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


def _dead_branch(h: Hypothesis, c: FeedbackContext) -> str:
    where = paths_text(h.paths)
    slopes = h.detail.get("slopes")
    if str(slopes).startswith("kinks_"):
        return _kinks_ignored(h, c)
    if slopes == "dead":
        return (f"Your {c.part} blocks the gradient at the ReLU on {where}, but that ReLU saw a positive "
                "input, so it passes the gradient on unchanged. Only a ReLU that saw a negative passes no gradient.")
    if slopes == "flipped":
        return (f"Your {c.part} swaps the ReLU slopes on {where}: a ReLU passes the gradient on unchanged "
                "where its input is positive, and a ReLU that saw a negative passes no gradient.")
    return (f"Your {c.part} lets gradient through the ReLU on {where}, but that ReLU saw a negative "
            "input. A ReLU that saw a negative passes no gradient: it sits on its flat part.")


ACCUMULATION_RULE = ".grad accumulates across backward calls: each call adds its gradient to what is already there."


def _belief(h: Hypothesis, c: FeedbackContext) -> str:
    belief, calls = h.detail.get("belief"), h.detail.get("calls")
    leaf = f"{c.tensor}.grad"
    told = {
        "last_only": f"keeps only the last backward call, as if each call overwrote {leaf}",
        "averaged": f"averages the {h.detail.get('counted')} backward calls",
        "first_only": "keeps only the first backward call",
        "doubled": "counts one backward call twice",
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
    return (f"Your {c.part} {told}. The program calls backward() {calls} times{zeroed}. {ACCUMULATION_RULE} "
            "Only zero_() (or setting .grad to None) starts the sum again, exactly where the program does it.")


def _accumulation(h: Hypothesis, c: FeedbackContext) -> str:
    if h.detail.get("belief"):
        return _belief(h, c)
    calls, counted = h.detail.get("calls"), h.detail.get("counted")
    rule = ACCUMULATION_RULE
    if h.detail.get("reason") == "zeroed":
        return (f"Your {c.part} is {times_text(h.detail.get('times'))} the gradient the program leaves in "
                f"{c.tensor}.grad. The program calls backward() {calls} times but zeroes {c.tensor}.grad "
                f"in between, so only the last call counts. {rule}")
    if counted == 1:
        return (f"Your {c.part} counts a single backward pass, but the program calls backward() {calls} "
                f"times without zeroing {c.tensor}.grad. {rule}")
    return (f"Your {c.part} counts {counted} backward passes, but the program calls backward() {calls} "
            f"times. {rule}")


def _untracked_leaf(h: Hypothesis, c: FeedbackContext) -> str:
    rule = "None means never tracked, 0 means tracked with zero slope."
    reason, tensor = h.detail.get("reason"), h.detail.get("tensor", c.tensor)
    if reason == "requires_grad_false":
        return (f"{tensor} was created with requires_grad=False, so autograd never tracked it and "
                f"backward() creates no gradient for it in {c.part}. {rule}")
    if reason == "not_a_leaf":
        return (f"{tensor} is computed from other tensors, and autograd keeps .grad only for leaves "
                f"(unless retain_grad() is called), so backward() stores nothing in {c.part}. {rule}")
    if reason == "not_in_graph":
        return (f"{tensor} never reaches {c.output}, so backward() stores no gradient for it in "
                f"{c.part}. {rule}")
    return (f"{tensor} has requires_grad=True and reaches {c.output}, so backward() stores a gradient "
            f"in {c.part}: it is a number, not None. {rule}")


def _shape(h: Hypothesis, c: FeedbackContext) -> str:
    given = "a single number" if c.answer_shape == [] else f"shape {format_shape(c.answer_shape)}"
    text = f"{c.part} has the shape of {c.tensor}, {format_shape(c.expected_shape)}; your answer has {given}."
    if h.detail.get("reduction") == "sum":
        text += " It looks like you added up the entries."
    elif h.detail.get("reduction") == "transpose":
        text += " It looks transposed."
    non_scalar = h.detail.get("non_scalar_outputs") or []
    if non_scalar:
        text += (f" {', '.join(non_scalar)} is not a scalar: a non-scalar backward needs a seed vector, "
                 "and the result has the leaf's shape, one entry per entry of the leaf.")
    else:
        text += f" A gradient always has the leaf's shape: one entry per entry of {c.tensor}."
    return text


def _seed_vector(h: Hypothesis, c: FeedbackContext) -> str:
    seed = h.detail.get("seed")
    used = {
        "one_hot": f"the one-hot seed that picks entry {h.detail.get('index')} only",
        "output": f"{h.detail.get('output')} itself as the seed",
        "ones": "a seed of all ones",
        "squared": "the seed applied twice (each entry squared)",
    }.get(str(seed), "another seed")
    return (f"Your {c.part} is what backward() gives with {used}, but the program seeds "
            f"{h.detail.get('output')}.backward() with {format_value(h.detail.get('given'))}. A non-scalar "
            "backward needs a seed vector: each output entry is weighted by its seed entry, and the "
            "result has the leaf's shape.")


def _forward_value(h: Hypothesis, c: FeedbackContext) -> str:
    detail = h.detail
    what = {
        "output": f"{detail.get('name')}",
        "leaf": f"{detail.get('name')} itself",
    }.get(str(detail.get("node_kind")), f"the {detail.get('name')} node")
    if detail.get("node_kind") == "op" and detail.get("tensor"):
        what = f"{detail['tensor']} (the {detail.get('name')} node)"
    return (f"Your {c.part} is the forward value of {what}, not a gradient. The forward pass computes "
            f"values; the backward pass computes how much {c.output} changes per unit change of "
            f"{c.tensor}: {chain_rule(len(c.leaf_paths))}.")


def _wrong_local_derivative(h: Hypothesis, c: FeedbackContext) -> str:
    detail = h.detail
    source, op = detail.get("edge", ["?", "?"])
    label = detail.get("label") or source
    used = with_value(detail.get("used"), detail.get("used_value"))
    right = with_value(detail.get("right"), detail.get("right_value"))
    along = f" along {paths_text(h.paths)}" if h.paths else ""
    text = (f"Your {c.part} uses {used} as the local derivative of {op} with respect to {label} "
            f"(the edge {label} → {op}), where the right one is {right}.")
    lesson = detail.get("lesson")
    if lesson:
        text += f" The rule: {lesson}."
    return text + f" Redo the product{along} with that factor."


def with_value(formula: object, value: object) -> str:
    """`x = 2` when the formula is a symbol and its value one number."""
    text = str(formula) if formula is not None else "?"
    if not isinstance(value, (int, float, list)) or isinstance(value, bool):
        return text
    number = format_value(value)
    return text if text == number else f"{text} = {number}"


def times_text(times: object) -> str:
    return {2: "twice", 3: "three times"}.get(times, f"{times} times") if isinstance(times, int) else "again"


_CLAUSES: dict[str, Callable[[str, dict[str, object]], str]] = {
    "missing_path": lambda paths, _: f"leaves out {paths}",
    "sign_error": lambda paths, _: f"flips the sign of {paths}",
    "extra_path": lambda paths, d: f"counts {paths} {times_text(d.get('times'))}",
    "cut_path": lambda paths, _: f"also counts {paths}, which detach() cuts",
    "dead_branch": lambda paths, _: f"lets gradient through the ReLU on {paths}, which saw a negative input",
}


def _combination(h: Hypothesis, c: FeedbackContext) -> str:
    components = [item for item in h.detail.get("components", []) if isinstance(item, dict)]
    clauses = [_CLAUSES[str(item["kind"])](paths_text(item["paths"]), item)
               for item in components if item.get("kind") in _CLAUSES]
    joined = "; it ".join(clauses) if clauses else "combines several slips"
    return f"Your {c.part} mixes several slips: it {joined}. Fix them one at a time: {ADD_RULE}."


def _mistake_clause(item: dict[str, object]) -> str:
    kind = item.get("kind")
    paths = item.get("paths") if isinstance(item.get("paths"), list) else []
    where = paths_text(paths) if paths else "its path"  # type: ignore[arg-type]
    if kind == "wrong_local_derivative":
        edge = item.get("edge") if isinstance(item.get("edge"), list) else ["?", "?"]
        label = item.get("label") or edge[0]  # type: ignore[index]
        return (f"it uses {item.get('used')} as the local derivative of {edge[1]} with respect to "  # type: ignore[index]
                f"{label} where the right one is {item.get('right')} ({item.get('lesson')})")
    if kind == "dead_branch":
        return f"it lets gradient through the kink on {where} as if its slope were 1"
    clause = _CLAUSES.get(str(kind))
    return "it " + clause(where, item) if clause else f"it makes a {KIND_SUMMARY.get(str(kind), kind)} slip"


def _two_mistakes(h: Hypothesis, c: FeedbackContext) -> str:
    items = [item for item in h.detail.get("mistakes", []) if isinstance(item, dict)]
    clauses = [_mistake_clause(item) for item in items]
    numbered = "; and ".join(f"({index}) {clause}" for index, clause in enumerate(clauses, start=1))
    return (f"No single mistake explains your {c.part}, but two together do: {numbered}. "
            "Fix them one at a time and check each factor along the path.")


MESSAGES: dict[str, Callable[[Hypothesis, FeedbackContext], str]] = {
    "two_mistakes": _two_mistakes,
    "missing_path": _missing_path,
    "extra_path": _extra_path,
    "product_of_paths": _product_of_paths,
    "sign_error": _sign_error,
    "dead_branch": _dead_branch,
    "accumulation": _accumulation,
    "untracked_leaf": _untracked_leaf,
    "shape": _shape,
    "seed_vector": _seed_vector,
    "forward_value": _forward_value,
    "wrong_local_derivative": _wrong_local_derivative,
    "combination": _combination,
}


def hypothesis_message(hypothesis: Hypothesis, context: FeedbackContext, also: list[str]) -> str:
    message = MESSAGES[hypothesis.kind](hypothesis, context)
    return message + also_text(also)


def also_text(also: list[str]) -> str:
    if not also:
        return ""
    causes = [KIND_SUMMARY.get(kind, kind) for kind in also]
    return " The same answer could also come from " + " or ".join(causes) + "."


def correct_message(context: FeedbackContext) -> str:
    return f"Correct: {context.part} matches the gradient autograd computes."


MAX_LISTED_PATHS = 4  # a big graph has hundreds: name a few, count the rest


def unknown_message(context: FeedbackContext, how_far: str, closest: str = "") -> str:
    listed = context.leaf_paths[:MAX_LISTED_PATHS]
    paths = paths_text(listed) if listed else f"each path from {context.tensor}"
    if len(context.leaf_paths) > len(listed):
        paths = f"the {len(context.leaf_paths)} paths from {context.tensor}, such as {paths},"
    return (f"Your {context.part} is not the gradient autograd computes, and it matches none of the "
            f"typical mistakes. {how_far}{closest} Check {paths}: {chain_rule(len(context.leaf_paths))}.")


def closest_text(hypothesis: Hypothesis) -> str:
    """Where the answer and the reference seem to part ways: the edge whose slip comes closest."""
    detail = hypothesis.detail
    edge = detail.get("edge") or ["?", "?"]
    label = detail.get("label") or edge[0]
    return (f" It comes closest to a slip in the local derivative of {edge[1]} with respect to {label} "
            f"(the edge {label} → {edge[1]}): start checking there.")
