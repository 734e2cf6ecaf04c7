"""Plain-language feedback, one message per kind of mistake. Each names the
path(s) in SPEC notation (x → mul → add → z) and states the rule to learn.
Messages never contain the expected value: students read them."""

from __future__ import annotations

import re
from collections.abc import Callable

from chainrule.diagnosis.message_context import (
    ADD_RULE,  # symbolic_grading imports it from here
    KIND_SUMMARY,
    PATH_CLAUSES,
    SERIES_RULE,
    FeedbackContext,
    chain_rule,
    path_text,
    paths_text,
    times_text,
    with_value,
)
from chainrule.diagnosis.slip_messages import (
    ACCUMULATION_RULE,
    belief_message,
    edge_words,
    kinks_ignored_message,
    two_mistakes_message,
    wrong_local_derivative_message,
)
from chainrule.model import Hypothesis
from chainrule.values import format_shape, format_value, ordinal


def _missing_path(h: Hypothesis, c: FeedbackContext) -> str:
    noun = "path" if len(h.paths) == 1 else "paths"
    cut = h.detail.get("beside_cut")
    if cut:
        return (f"Your {c.part} leaves out the {noun} {paths_text(h.paths)}, as if detach() stopped all of "
                f"{c.tensor}'s gradient. detach() cuts only the path that runs through it ({paths_text(cut)}); "
                f"along {paths_text(h.paths)} the gradient still flows back: {SERIES_RULE}.")
    routes = h.detail.get("routes")
    if routes and h.detail.get("through"):
        return (f"Your {c.part} leaves out the route through {h.detail['through']}, one of the {routes} routes that "
                f"read {paths_text(h.paths)}: they pass through different {h.paths[0][1]} nodes, and each route "
                "contributes its own term: the gradient is the sum over every route, also over routes whose ops "
                "read alike.")
    if routes:
        return (f"Your {c.part} leaves out one of the {routes} routes that read {paths_text(h.paths)}: they pass "
                f"through different {h.paths[0][1]} nodes, and each route contributes its own term: the gradient "
                "is the sum over every route, also over routes whose ops read alike.")
    return (f"Your {c.part} leaves out the {noun} {paths_text(h.paths)}. {c.tensor} reaches {c.output} "
            f"along {len(c.leaf_paths)} paths, and parallel paths into one node add: the gradient is "
            "the sum of the contributions of every path.")


def _extra_path(h: Hypothesis, c: FeedbackContext) -> str:
    noun = "path" if len(h.paths) == 1 else "paths"
    if h.detail.get("reason") == "counted":
        return (f"Your {c.part} counts the {noun} {paths_text(h.paths)} {times_text(h.detail.get('times'))}. "
                f"Each path from {c.tensor} to {c.output} contributes once: {chain_rule(len(c.leaf_paths))}.")
    if h.detail.get("reason") == "no_grad":
        return (f"Your {c.part} also counts the {noun} {paths_text(h.paths)}, which runs through a computation "
                "made under torch.no_grad(). Autograd records no graph inside that block: its results are "
                "constants, so no gradient flows back along that path.")
    return (f"Your {c.part} also counts the {noun} {paths_text(h.paths)}, which runs through detach(). "
            "A detached tensor is a constant to autograd: its value flows forward, but no gradient "
            "flows back through it, so that path contributes nothing.")


def _factors(h: Hypothesis) -> tuple[str, str]:
    """A product's or quotient's two operands as its rule writes them: sin(x) bare, (x² + 1) in parentheses."""
    u, v = [f if re.fullmatch(r"[\w.]+(\(.*\)|[²³])?", f) else f"({f})"
            for f in [*(h.detail.get("factors") or []), "u", "v"][:2]]
    return u, v


def _product_of_paths(h: Hypothesis, c: FeedbackContext) -> str:
    if h.detail.get("rule") in ("quotient_rule", "quotient_unsquared"):
        u, v = _factors(h)
        rule = (f"The quotient rule: ({u}/{v})′ = ({u}′·{v} - {u}·{v}′)/{v}² (′: the derivative by {c.tensor})")
        if h.detail["rule"] == "quotient_rule":
            return (f"Your {c.part} divides the derivatives of {u} and {v}: the derivative of a quotient is not the "
                    f"quotient of the derivatives. {rule}.")
        return (f"Your {c.part} divides by {v} where the quotient rule divides by {v} squared. {rule}: both terms "
                f"over {v}².")
    if h.detail.get("rule") == "product_rule":
        u, v = _factors(h)
        return (f"Your {c.part} multiplies the derivatives of the two factors {u} and {v} of a product. The "
                f"product rule: ({u}·{v})′ = {u}′·{v} + {u}·{v}′ (′: the derivative by {c.tensor}), each factor's "
                "derivative times the other factor, and the two terms add; the derivative of a product is not the "
                "product of the derivatives.")
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


def _dead_branch(h: Hypothesis, c: FeedbackContext) -> str:
    where = paths_text(h.paths)
    slopes = h.detail.get("slopes")
    if str(slopes).startswith("kinks_"):
        return kinks_ignored_message(h, c)
    if slopes == "dead":
        return (f"Your {c.part} blocks the gradient at the ReLU on {where}, but that ReLU saw a positive "
                "input, so it passes the gradient on unchanged. Only a ReLU that saw a negative passes no gradient.")
    if slopes == "flipped":
        return (f"Your {c.part} swaps the ReLU slopes on {where}: a ReLU passes the gradient on unchanged "
                "where its input is positive, and a ReLU that saw a negative passes no gradient.")
    if h.detail.get("at_zero"):
        return (f"Your {c.part} lets gradient through the ReLU on {where}, but that ReLU's input is exactly 0, "
                "at its kink, where torch takes the slope as 0 (relu′(0) = 0): no gradient passes there.")
    return (f"Your {c.part} lets gradient through the ReLU on {where}, but that ReLU saw a negative "
            "input. A ReLU that saw a negative passes no gradient: it sits on its flat part.")


def _accumulation(h: Hypothesis, c: FeedbackContext) -> str:
    if h.detail.get("belief"):
        return belief_message(h, c)
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


UNTRACKED_RULE = "None means never tracked, 0 means tracked with zero slope."
NON_LEAF_RULE = ("None here means no gradient was kept, not that nothing was tracked: autograd tracks this "
                 "tensor and passes gradient through it to the leaf it is computed from, but stores .grad only "
                 "for leaves.")
NOT_REACHED_RULE = "None means no gradient arrived, 0 means a gradient of zero arrived."


def _untracked_leaf(h: Hypothesis, c: FeedbackContext) -> str:
    reason, tensor = h.detail.get("reason"), h.detail.get("tensor", c.tensor)
    if reason == "requires_grad_false":
        return (f"{tensor} was created with requires_grad=False, so autograd never tracked it and "
                f"backward() creates no gradient for it in {c.part}. {UNTRACKED_RULE}")
    if reason == "not_a_leaf":
        return (f"{tensor} is computed from other tensors (it is not a leaf), and autograd keeps .grad only for "
                f"leaves unless retain_grad() is called on it, so backward() stores nothing in {c.part}. "
                f"{NON_LEAF_RULE}")
    if reason == "retained":
        return (f"{tensor} is not a leaf (it is computed from other tensors), and backward() keeps a non-leaf's "
                f".grad only when {tensor}.retain_grad() is called before backward(). This exercise keeps it, so "
                f"{c.part} is a number, not None; without retain_grad() it stays None.")
    if reason == "not_in_graph":
        return (f"{tensor} never reaches {c.output}, so backward() stores no gradient for it in "
                f"{c.part}. {NOT_REACHED_RULE}")
    return (f"{tensor} has requires_grad=True and reaches {c.output}, so backward() stores a gradient "
            f"in {c.part}: it is a number, not None. {UNTRACKED_RULE}")


def _shape(h: Hypothesis, c: FeedbackContext) -> str:
    given = "a single number" if c.answer_shape == [] else f"shape {format_shape(c.answer_shape)}"
    text = f"{c.part} has the shape of {c.tensor}, {format_shape(c.expected_shape)}; your answer has {given}."
    if h.detail.get("reduction") == "sum":
        text += " It looks like you added up the entries."
    elif h.detail.get("reduction") == "transpose":
        text += " It looks transposed."
    elif h.detail.get("reduction") == "unsummed":
        text += (f" Its entries add up to the gradient: {c.tensor} is broadcast (its value is used at every entry), "
                 "so its gradient is the sum of the gradients of its copies: add them up.")
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
        "one_hot": f"the one-hot seed that picks only the {_entry(h.detail.get('index'))}",
        "output": f"{h.detail.get('output')} itself as the seed",
        "ones": "a seed of all ones",
        "squared": "the seed applied twice (each entry squared)",
        "reversed": "the seed's entries in the reverse order (each output entry weighted by another's seed entry)",
        "unscaled": f"the seed without its scale {format_value(h.detail.get('scale'))}",
    }.get(str(seed), "another seed")
    return (f"Your {c.part} is what backward() gives with {used}, but the program seeds "
            f"{h.detail.get('output')}.backward() with {format_value(h.detail.get('given'))}. A non-scalar "
            "backward needs a seed vector: each output entry is weighted by its seed entry, and the "
            "result has the leaf's shape.")


def _entry(index: object) -> str:
    """detail["index"] counts from 0, as torch does; the student reads "the first entry"."""
    return f"{ordinal(index + 1)} entry" if isinstance(index, int) else "one entry"


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


def _other_gradient(h: Hypothesis, c: FeedbackContext) -> str:
    other, paths = str(h.detail.get("tensor")), "paths" if len(c.leaf_paths) >= 2 else "path"
    if h.detail.get("where") == "below":
        return (f"Your {c.part} is {other}.grad, the gradient of {other}, which lies below {c.tensor}. "
                f"{c.part} stops at {c.tensor}: the local derivatives from {other} up to {c.tensor} belong to "
                f"{other}'s gradient, not to {c.tensor}'s.")
    if h.detail.get("where") == "above":
        return (f"Your {c.part} is {other}.grad, the gradient of {other}, which {c.tensor}'s {paths} pass"
                f"{'' if paths == 'paths' else 'es'} through. "
                f"{c.part} goes on past {other} down to {c.tensor}: multiply by the local derivatives from "
                f"{c.tensor} up to {other} as well.")
    return (f"Your {c.part} is {other}.grad, the gradient of another tensor. {c.part} is how much {c.output} "
            f"changes per unit change of {c.tensor}: follow the {paths} that start{'' if paths == 'paths' else 's'} "
            f"at {c.tensor}.")


def _combination(h: Hypothesis, c: FeedbackContext) -> str:
    components = [item for item in h.detail.get("components", []) if isinstance(item, dict)]
    clauses = [PATH_CLAUSES[str(item["kind"])](paths_text(item["paths"]), item)
               for item in components if item.get("kind") in PATH_CLAUSES]
    joined = "; it ".join(clauses) if clauses else "combines several slips"
    return f"Your {c.part} mixes several slips: it {joined}. Fix them one at a time: {ADD_RULE}."


MESSAGES: dict[str, Callable[[Hypothesis, FeedbackContext], str]] = {
    "two_mistakes": two_mistakes_message,
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
    "other_gradient": _other_gradient,
    "wrong_local_derivative": wrong_local_derivative_message,
    "combination": _combination,
}


def hypothesis_message(hypothesis: Hypothesis, context: FeedbackContext, second: Hypothesis | None = None) -> str:
    """One diagnosis, stated plainly. `second`: a reading the evidence supports just as well (the
    engine cannot rank one above the other); it is told with how to tell the two apart. Readings it
    ranks lower are never listed."""
    message = MESSAGES[hypothesis.kind](hypothesis, context)
    return message + second_reading_text(hypothesis, second, context) if second is not None else message


def second_reading_text(chosen: Hypothesis, second: Hypothesis, context: FeedbackContext) -> str:
    """E.g. "It could equally be that your x.grad leaves out x → add → z: both give your number here.
    To tell which, work out the path x → mul → add → z and the path x → add → z again on their own:
    the one your working does not match is the slip." """
    return (f" It could equally be that your {context.part} {reading_clause(second)}: both give your number "
            f"here. To tell which, work out {_site(chosen)} and {_site(second)} again on their own: the one "
            "your working does not match is the slip.")


def reading_clause(h: Hypothesis) -> str:
    """What a hypothesis says the student did, as a verb phrase after "your x.grad"."""
    detail = h.detail
    if h.kind == "wrong_local_derivative" and isinstance(detail.get("edge"), list):
        used = with_value(detail.get("used"), detail.get("used_value"))
        return f"uses {used} as the local derivative of {edge_words(detail)}"
    if h.kind == "forward_value":
        return f"is the forward value of {detail.get('tensor') or detail.get('name')}"
    if h.kind == "other_gradient":
        return f"is {detail.get('tensor')}.grad"
    clause = PATH_CLAUSES.get("cut_path" if h.kind == "extra_path" and detail.get("reason") == "detach" else h.kind)
    if clause is not None and h.paths:
        return clause(paths_text(h.paths), detail)
    return f"comes from {KIND_SUMMARY.get(h.kind, h.kind.replace('_', ' '))}"


def _site(h: Hypothesis) -> str:
    """Where to look to confirm a reading."""
    if h.kind == "wrong_local_derivative" and isinstance(h.detail.get("edge"), list):
        return f"the local derivative on the edge {path_text([str(name) for name in h.detail['edge']])}"
    if h.kind == "forward_value":
        return "which numbers in your working come from the forward pass"
    if h.paths:
        noun = "path" if len(h.paths) == 1 else "paths"
        return f"the {noun} {paths_text(h.paths)}"
    return "each step of your working"


def correct_message(context: FeedbackContext) -> str:
    return f"Correct: {context.part} matches the gradient autograd computes."


def too_few_digits_message(context: FeedbackContext, decimals: int) -> str:
    places = f"{decimals} decimal{'s' if decimals != 1 else ''}"
    return (f"Your {context.part} agrees with the gradient autograd computes only to the {places} you wrote, "
            "and this part checks more digits than that. Give more significant digits: "
            f"print({context.part}.tolist()) or torch.set_printoptions(precision=8) shows them.")


MAX_LISTED_PATHS = 4  # a big graph has hundreds: name a few, count the rest


def unknown_message(context: FeedbackContext, how_far: str, closest: str = "") -> str:
    listed = context.leaf_paths[:MAX_LISTED_PATHS]
    paths = paths_text(listed) if listed else f"each path from {context.tensor}"
    if len(context.leaf_paths) > len(listed):
        paths = f"the {len(context.leaf_paths)} paths from {context.tensor}, such as {paths},"
    return (f"Your {context.part} is not the gradient autograd computes, and it matches none of the "
            f"typical mistakes. {how_far}{closest} Check {paths}: {chain_rule(len(context.leaf_paths))}.")

