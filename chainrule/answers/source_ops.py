"""The reference graph's words checked against the student's program. A program or fix part's numbers are
diagnosed on the reference's graph, so a message names its ops ("the edge sum → div", "the path
w → dot → … → add → loss"); said to a student whose program has no division, or subtracts where the
exercise adds, that is untrue of their code. What the student's source spells is read here (never run):
an op it cannot have made is not named. A wrong local derivative of 1 on an op the program lacks is what
leaving the op out gives, and is told so, at the student's line of the op before it; a path through an op
it lacks is told by its ends ("the path from w to loss")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from chainrule.answers.source_facts import SourceFacts
from chainrule.diagnosis.numeric import Diagnosis
from chainrule.model import Analysis, Graph, Hypothesis
from chainrule.values import Value, values_match

# An op of a reference graph and what in a program's source makes one. Ops made without being written
# (a broadcast's expand, an index's select, a view) are not listed: they are never judged absent.
SPELLINGS: dict[str, tuple[str, ...]] = {
    "mul": ("*", "mul", "prod"), "div": ("/", "div"), "add": ("+", "add", "sum("), "sub": ("-", "sub"),
    "neg": ("-", "neg"), "pow": ("**", "pow", "square"), "mm": ("@", "mm", "matmul", "linear"),
    "mv": ("@", "mv", "matmul", "linear"), "dot": ("@", "dot", "matmul"), "matmul": ("@", "matmul"),
    "addmm": ("@", "linear", "addmm"), "sum": (".sum(", "torch.sum("), "mean": ("mean",), "exp": ("exp",),
    "log": ("log",), "tanh": ("tanh",), "sigmoid": ("sigmoid",), "sqrt": ("sqrt", "** 0.5", "**0.5"),
    "abs": ("abs",), "sin": ("sin",), "cos": ("cos",), "softmax": ("softmax",), "stack": ("stack",),
    "cat": ("cat",), "detach": ("detach", ".data", "no_grad"), "clone": ("clone",),
}
# Python's sum(gs) adds, where `t.sum()` is the sum op; `*` multiplies, where `**` is a power.
_PATTERNS = {"sum(": re.compile(r"(?<![.\w])sum\("), "*": re.compile(r"(?<!\*)\*(?!\*)")}
OP_WORDS = {"div": "division", "mul": "multiplication", "add": "addition", "sub": "subtraction",
            "pow": "power", "mean": "mean", "sum": "sum", "neg": "negation"}
_TWICE = re.compile(r"(the path from [\w.\[\]]+ to [\w.\[\]]+)(?: and \1)+")
_PATH = re.compile(r"(?P<lead>\b(?:the |a )?paths? )?(?P<first>[\w.\[\]]+)(?P<rest>(?: → [\w.\[\]]+)+)")


def has_op(facts: SourceFacts, op: str) -> bool:
    """Whether the source could make the op (True for an op not listed: it is never judged absent)."""
    spellings = SPELLINGS.get(op)
    if spellings is None:
        return True
    return any(_spelled(code, spelling) for code in _code_lines(facts) for spelling in spellings)


def _spelled(code: str, spelling: str) -> bool:
    pattern = _PATTERNS.get(spelling)
    return pattern.search(code) is not None if pattern is not None else spelling in code


def told_of_the_program(found: Diagnosis, facts: SourceFacts, analyses: Sequence[Analysis],
                        answers: Sequence[Value], tolerances: tuple[float, float]) -> Diagnosis:
    if found.correct or not facts.parsed or found.kind == "code_error" or "code" in found.detail:
        return found  # a finding of the program's own (a cut, a reset) is told at its line already
    left_out = _left_out(found.part, facts, analyses, answers, tolerances)
    if left_out is not None and not _is_one(left_out.detail.get("used")) \
            and found.kind not in ("wrong_local_derivative", "unknown"):
        left_out = None  # `-` for `+` is told as the sign it flips, not as an addition missing
    if left_out is not None:
        return _op_left_out(found, left_out, facts, analyses[0].graph)
    if found.kind == "missing_path" and found.detail.get("beside_cut") and not has_op(facts, "detach"):
        return replace(found, message=_nothing_reaches(found))  # "as if detach() stopped …" to a program with none
    message = _PATH.sub(lambda path: _path_told(path, facts), found.message)
    message = _TWICE.sub(r"\1", message)  # two paths told by the same ends are one
    return found if message == found.message else replace(found, message=message)


def _nothing_reaches(found: Diagnosis) -> str:
    tensor = found.part.removesuffix(".grad")
    return (f"In your program no gradient reaches {tensor}: your {found.part} holds none of the gradient that this "
            f"exercise's paths from {tensor} carry. An op whose local derivative is 0 wherever it is defined (round, "
            "floor, sign, a comparison) passes no gradient back; this exercise keeps a path around it that does. "
            "Multiply the local derivatives along each path, edge by edge, and keep a path that carries gradient.")


def _left_out(part: str, facts: SourceFacts, analyses: Sequence[Analysis], answers: Sequence[Value],
              tolerances: tuple[float, float]) -> Hypothesis | None:
    """The reference's hypothesis of a wrong local derivative on the edge into an op X the student's source
    cannot make, when it gives the student's values at every point: X left out (a local derivative of 1: a
    forgotten /N was told as "uses 1 as the local derivative of div", or as a path counted N times) or
    replaced by something else (a mean where the exercise sums), the left-out reading first."""
    if not analyses or len(analyses) != len(answers):
        return None
    rel_tol, abs_tol = tolerances
    absent = {node.name for node in analyses[0].graph.nodes if node.kind == "op" and not has_op(facts, node.name)}
    if not absent:
        return None
    candidates = [h for h in analyses[0].hypotheses.get(part, []) if h.kind == "wrong_local_derivative"
                  and isinstance(h.detail.get("edge"), list) and len(h.detail["edge"]) == 2
                  and h.detail["edge"][1] in absent and not h.detail.get("everywhere")]
    for candidate in sorted(candidates, key=lambda h: not _is_one(h.detail.get("used"))):
        same = (candidate.detail["edge"], candidate.detail.get("rule"))
        if all(any(other.kind == candidate.kind and (other.detail.get("edge"), other.detail.get("rule")) == same
                   and values_match(answer, other.value, rel_tol=rel_tol, abs_tol=abs_tol)
                   for other in analysis.hypotheses.get(part, []))
               for analysis, answer in zip(analyses, answers, strict=True)):
            return candidate
    return None


def _path_told(path: re.Match[str], facts: SourceFacts) -> str:
    names = [path.group("first"), *path.group("rest").split(" → ")[1:]]
    if all(has_op(facts, op) for op in names[1:-1]):
        return path.group(0)
    return f"{path.group('lead') or 'the path '}from {names[0]} to {names[-1]}"


def _op_left_out(found: Diagnosis, left_out: Hypothesis, facts: SourceFacts, graph: Graph) -> Diagnosis:
    """Told at the student's line of the op the left-out one feeds (`loss = out + gp` for a forgotten
    `lam *` before the addition), else of the op before it (`.sum()` for a forgotten `/ N` at the end)."""
    before, op = (str(name) for name in left_out.detail["edge"])
    after = _consumer(left_out, graph)
    lines, where = _lines_of(facts, after), ""
    if len(lines) == 1 and after is not None:
        where = f" before the {after} on {facts.quoted(lines[0])}"
    else:
        lines = _lines_of(facts, before)
        where = f" after the {before} on {facts.quoted(lines[0])}" if len(lines) == 1 else ""
    words = OP_WORDS.get(op, op)
    if _is_one(left_out.detail.get("used")):
        message = (f"Your program has no {words} ({op}) where this exercise has one{where}: your {found.part} is the "
                   f"exercise's gradient without it. Every op the exercise applies multiplies the gradient by its "
                   f"local derivative, so leaving one out changes the gradient of everything before it. Put the "
                   f"{words} back where the exercise has it.")
    else:
        lesson = f" The rule: {left_out.detail['lesson']}." if left_out.detail.get("lesson") else ""
        message = (f"Your program has no {words} ({op}) where this exercise has one{where}: what it computes there "
                   f"instead passes the gradient on with {left_out.detail.get('used')} as that step's local "
                   f"derivative, where the {words}'s is {left_out.detail.get('right')}.{lesson} Compute that step as "
                   "the exercise does.")
    detail = {**found.detail, **left_out.detail, "code": {"finding": "op_left_out", "op": op}}
    if len(lines) == 1:
        detail["cause_lines"] = lines
    return replace(found, kind=left_out.kind, paths=left_out.paths, highlight=left_out.highlight, message=message,
                   detail=detail)


def _consumer(left_out: Hypothesis, graph: Graph) -> str | None:
    """The op the left-out op's output flows into, when it is one op."""
    wrong = left_out.highlight.wrong_edges
    if len(wrong) != 1:
        return None
    targets = {edge.target for edge in graph.edges if edge.source == wrong[0][1]}
    nodes = [graph.node(target) for target in targets]
    ops = [node.name for node in nodes if node is not None and node.kind == "op"]
    return ops[0] if len(ops) == 1 and len(targets) == 1 else None


def _lines_of(facts: SourceFacts, op: str | None) -> list[int]:
    if op is None or op not in SPELLINGS:
        return []
    return [number for number, code in enumerate(_code_lines(facts), 1)
            if any(_spelled(code, spelling) for spelling in SPELLINGS[op])]


def _is_one(value: object) -> bool:
    try:
        return float(str(value)) == 1.0
    except ValueError:
        return False


def _code_lines(facts: SourceFacts) -> list[str]:
    return [line.split("#")[0] for line in facts.lines]
