"""What every feedback message is built from: the part's context, the path
notation of SPEC §5 (x → mul → add → z), the chain rule's wording."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from chainrule.values import Shape, format_value, is_number_text

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
    "other_gradient": "giving another tensor's gradient",
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


def with_value(formula: object, value: object) -> str:
    """`2·x = 4` (the formula, then its value where the student's numbers are few); a bare
    number stays as it is, even where it stands for every entry of a vector."""
    text = str(formula) if formula is not None else "?"
    if not isinstance(value, (int, float, list)) or isinstance(value, bool) or is_number_text(text):
        return text
    number = format_value(value)
    return text if text == number else f"{text} = {number}"


def times_text(times: object) -> str:
    return {2: "twice", 3: "three times"}.get(times, f"{times} times") if isinstance(times, int) else "again"


PATH_CLAUSES: dict[str, Callable[[str, dict[str, object]], str]] = {
    "missing_path": lambda paths, _: f"leaves out {paths}",
    "sign_error": lambda paths, _: f"flips the sign of {paths}",
    "extra_path": lambda paths, d: f"counts {paths} {times_text(d.get('times'))}",
    "cut_path": lambda paths, _: f"also counts {paths}, which detach() cuts",
    "dead_branch": lambda paths, _: f"lets gradient through the ReLU on {paths}, which saw a negative input",
}
