"""The rules every feedback message must keep, checked on
messages rendered from real analyses:

- no name from the parameter table (x0, xs, ws…) unless the student sees it
  (a variable of the program, a word of the statement, a formula's symbol);
- no "positions" (entries are told as English ordinals: "the second entry");
- nothing about parallel paths where the gradient has one path;
- a wrong local derivative states its rule and both factors, the used and the right;
- a placeholder for an unnamed intermediate (u) is said to be what it stands for;
- no list of alternatives: one diagnosis, and at most one second reading (one the evidence
  supports just as well, told with how to tell the two apart), never "could also come from A or B".
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from chainrule import Analysis, diagnose_numeric
from chainrule.analysis.mutations.input_symbols import PLACEHOLDERS
from chainrule.diagnosis.message_context import KIND_SUMMARY
from chainrule.diagnosis.messages import hypothesis_message
from chainrule.diagnosis.numeric import feedback_context
from chainrule.model import Hypothesis

WORD = re.compile(r"(?<![\w'’])[A-Za-z_][A-Za-z0-9_]*")  # not the s of "path's"
POSITIONS = re.compile(r"\bpositions?\b|\bentr(y|ies) \d", re.IGNORECASE)  # "entry 0": a position as a number
PARALLEL = re.compile(r"\b(paths|parallel)\b", re.IGNORECASE)
VACUOUS_RIGHT = ("its local derivative", "the local derivative of")
SECOND_READING = "It could equally be"
TELL_APART = "To tell which"


def alternatives_problems(message: str) -> list[str]:
    """A list of alternative causes, or a second reading without how to tell it from the first."""
    found = []
    if re.search(r"could also (come|be) from|the same answer could", message, re.IGNORECASE):
        found.append("lists what else could explain the answer")
    summaries = list(KIND_SUMMARY.values())
    if any(f"{a} or {b}" in message for a in summaries for b in summaries if a != b):
        found.append("offers a list of alternative mistakes")
    if message.count(SECOND_READING) > 1:
        found.append("offers more than one second reading")
    if SECOND_READING in message and TELL_APART not in message:
        found.append("a second reading without how to tell the two apart")
    return found


@dataclass
class Rendered:
    slug: str
    part: str
    kind: str
    message: str
    used: str | None = None  # a wrong local derivative's factors, as the document gives them
    right: str | None = None
    lesson: str | None = None
    label_note: str | None = None
    components: list[dict[str, Any]] = field(default_factory=list)  # a two_mistakes' mistakes


@dataclass(frozen=True)
class Seen:
    """What the student sees of one assignment: its statement's words and the program's names."""

    slug: str
    hidden: frozenset[str]  # parameter names the student never sees
    visible: frozenset[str]  # names the program and the statement give
    single_path: frozenset[str]  # parts whose gradient flows along one path only (none detached)


def seen_by_student(slug: str, statement: str, params: dict[str, Any], analysis: Analysis,
                    symbols: set[str]) -> Seen:
    names = {node.name for node in analysis.graph.nodes} | {node.tensor_name for node in analysis.graph.nodes
                                                            if node.tensor_name}
    visible = names | set(WORD.findall(statement)) | symbols
    single = {part for part, reference in analysis.parts.items()
              if len(analysis.paths.get(reference.tensor, [])) == 1 and not _detached(analysis, part)}
    hidden = {name for name in set(params) - visible if _table_like(name)}
    return Seen(slug, frozenset(hidden), frozenset(visible), frozenset(single))


def _table_like(name: str) -> bool:
    """x0, xs, w1s, b_0, t: a parameter table's name; not `seed` or `gamma`, which read as words."""
    return not name.isalpha() or len(name) <= 2


def _detached(analysis: Analysis, part: str) -> bool:
    return any(h.kind == "extra_path" and h.detail.get("reason") == "detach" for h in analysis.hypotheses.get(part, []))


def from_hypothesis(slug: str, part: str, hypothesis: Hypothesis, message: str) -> Rendered:
    detail = hypothesis.detail
    return Rendered(slug, part, hypothesis.kind, message, used=detail.get("used"), right=detail.get("right"),
                    lesson=detail.get("lesson"), label_note=detail.get("label_note"),
                    components=list(detail.get("mistakes", [])))


def from_document(slug: str, part: str, document: dict[str, Any]) -> Rendered:
    """A part's diagnosis as the result document gives it (graded through the real pipeline)."""
    return Rendered(slug, part, document["kind"], document["message"], used=document.get("used"),
                    right=document.get("right"), components=list(document.get("mistakes") or []))


def rendered(slug: str, analysis: Analysis, part: str) -> Iterator[Rendered]:
    """Every hypothesis's own message, the diagnosis its predicted answer gets, and an unknown."""
    reference = analysis.parts[part]
    for hypothesis in analysis.hypotheses.get(part, []):
        context = feedback_context(analysis, reference, hypothesis.value)
        yield from_hypothesis(slug, part, hypothesis, hypothesis_message(hypothesis, context))
    answers = {repr(h.value): h.value for h in analysis.hypotheses.get(part, []) if not h.any_number}
    if reference.value is not None:
        answers["far"] = _far(reference.value)
    for answer in answers.values():
        found = diagnose_numeric(analysis=analysis, part=part, answer=answer)
        yield Rendered(slug, part, found.kind, found.message, used=found.detail.get("used"),
                       right=found.detail.get("right"), lesson=found.detail.get("lesson"),
                       label_note=found.detail.get("label_note"), components=list(found.detail.get("mistakes", [])))


def _far(value: Any) -> Any:
    """An answer no mistake explains: the reference scaled and shifted."""
    if isinstance(value, list):
        return [_far(item) for item in value]
    return float(value) * 1.37 + 0.91


def problems(item: Rendered, seen: Seen) -> list[str]:
    found = []
    words = set(WORD.findall(item.message))
    leaked = sorted(words & seen.hidden)
    if leaked:
        found.append(f"names the student never sees: {leaked}")
    prose = item.message  # a rule's dummy variable (d ln(u)/du = 1/u) is no placeholder
    for lesson in [item.lesson, *(c.get("lesson") for c in item.components)]:
        prose = prose.replace(str(lesson), "") if lesson else prose
    undefined = sorted(symbol for symbol in set(WORD.findall(prose)) & set(PLACEHOLDERS) - seen.visible
                       if f"{symbol} = " not in prose)
    if undefined and "the output of" not in item.message:
        found.append(f"placeholder {undefined} used without saying what it stands for")
    found += alternatives_problems(item.message)
    if POSITIONS.search(item.message):
        found.append("speaks of positions by number")
    if item.part in seen.single_path and PARALLEL.search(item.message):
        found.append("speaks of paths on a single-path gradient")
    if item.kind == "wrong_local_derivative":
        found += [] if "The rule: " in item.message else ["no rule"]
        found += _factor_problems(item.message, item.used, item.right, item.lesson, item.label_note)
    for component in item.components:
        if component.get("kind") == "wrong_local_derivative":
            found += _factor_problems(item.message, component.get("used"), component.get("right"),
                                      component.get("lesson"), component.get("label_note"))
    return [f"{item.slug} {item.part} {item.kind}: {problem}: {item.message}" for problem in found]


def _factor_problems(message: str, used: Any, right: Any, lesson: Any, note: Any) -> list[str]:
    found = []
    if not used or str(used) not in message:
        found.append(f"the used factor {used!r} is not stated")
    if not right or str(right) not in message or str(right).startswith(VACUOUS_RIGHT):
        found.append(f"the right factor {right!r} is not stated")
    if lesson is not None and (not lesson or str(lesson) not in message):
        found.append("no rule")
    if note and str(note) not in message:
        found.append(f"the placeholder's meaning ({note}) is not said")
    return found

