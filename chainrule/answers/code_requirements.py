"""The requirements a program or fix part's config states (assignments.part_config: `backward_calls`,
`forbid`), checked in the student's source. A program that leaves the exercise's gradients through
autograd is right however it gets there; only a requirement the instructor wrote down may refuse right
values, and the feedback quotes it as the requirement (kind `requirement`), at the student's line.

What is counted comes from the worker's own parse of the source (chainrule.answers.source_facts):
a backward() call that no loop, comprehension or function repeats is one call per line. Only where a
call is repeated is the harness's count used, a claim the student's code could forge."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from chainrule.answers.code_messages import capitalised, times
from chainrule.answers.source_facts import SourceFacts, source_facts
from chainrule.answers.trace_report import ProgramTrace
from chainrule.diagnosis.numeric import Diagnosis
from chainrule.model import Highlight

# What an instructor may forbid, each with the words the feedback uses for it.
FORBIDDABLE: dict[str, str] = {
    "torch.autograd.grad": "torch.autograd.grad",
    "torch.func": "torch.func (or functorch)",
    ".data": ".data",
    "detach": "detach()",
    "no_grad": "torch.no_grad()",
    "retain_graph": "retain_graph=True",
}
MAX_BACKWARD_CALLS = 1000


@dataclass(frozen=True)
class Requirements:
    backward_calls: int | None = None  # exactly this many backward() calls
    forbid: tuple[str, ...] = ()  # keys of FORBIDDABLE

    def __bool__(self) -> bool:
        return self.backward_calls is not None or bool(self.forbid)

    def sentences(self) -> list[str]:
        """The requirements in words, as the preview and the feedback state them."""
        said = []
        if self.backward_calls is not None:
            said.append(f"call backward() exactly {times(self.backward_calls)}")
        said += [f"do not use {FORBIDDABLE[name]}" for name in self.forbid]
        return said


def requirements_checked(found: Diagnosis, requirements: Requirements | None, facts: SourceFacts,
                         traces: Sequence[ProgramTrace | None]) -> Diagnosis:
    """`found` refused when its values are right but a stated requirement is not met; a wrong answer
    that also breaks one keeps its diagnosis and is told the requirement too."""
    if not requirements or not facts.parsed or found.kind == "code_error":
        return found
    unmet = _unmet(requirements, facts, traces)
    if unmet is None:
        return found
    sentence, lines, detail = unmet
    if not found.correct:
        return replace(found, message=f"{found.message} Also: {sentence}")
    message = f"Your values are right, but this exercise states a requirement your program does not meet: {sentence}"
    return replace(found, correct=False, kind="requirement", message=message, paths=[], highlight=Highlight(),
                   detail={**found.detail, "code": {"finding": "requirement", **detail}, "cause_lines": lines})


Unmet = tuple[str, list[int], dict[str, object]]


def reference_breaks(requirements: Requirements, source: str) -> str | None:
    """What an exercise's own program breaks of its part's requirements (then no right program could meet
    them), from its source alone; a backward() call repeated by a loop is not counted here."""
    facts = source_facts(source)
    if not requirements or not facts.parsed:
        return None
    if requirements.backward_calls is not None and any(site.repeated for site in _backward_sites(
            ast.parse(source))):
        requirements = Requirements(None, requirements.forbid)
    unmet = _unmet(requirements, facts, [])
    return unmet[0] if unmet is not None else None


def _unmet(requirements: Requirements, facts: SourceFacts, traces: Sequence[ProgramTrace | None]) -> Unmet | None:
    tree = ast.parse("\n".join(facts.lines))
    for name in requirements.forbid:
        lines = sorted({getattr(node, "lineno", 0) for node in ast.walk(tree) if _USES[name](node)} - {0})
        if lines:
            where = _lines_quoted(lines, facts)
            return (f"it asks you not to use {FORBIDDABLE[name]}, and {where} uses it. Reach the same gradients "
                    "without it.", lines, {"requirement": "forbid", "forbidden": name})
    wanted = requirements.backward_calls
    if wanted is None:
        return None
    sites = _backward_sites(tree)
    repeated = any(site.repeated for site in sites)
    trace = next((trace for trace in traces if trace is not None), None)
    calls = trace.backward_count if repeated and trace is not None else len(sites)
    if calls == wanted:
        return None
    lines = sorted({site.line for site in sites})
    if not lines:
        said = "your program never calls backward()"
    else:
        loop = ", in a loop" if repeated else ""
        said = f"your program calls backward() {times(calls)} ({_lines_text(lines)}{loop})"
    return (f"it asks you to call backward() exactly {times(wanted)}, and {said}. "
            f"{capitalised(_why(wanted))}", lines, {"requirement": "backward_calls", "calls": calls,
                                                   "expected_calls": wanted})


def _why(wanted: int) -> str:
    if wanted == 1:
        return "compute the gradients with one backward() call."
    return ("make one backward() call per step, as it asks: .grad accumulates, and the exercise is about each call "
            "adding its gradient to what is already there.")


@dataclass(frozen=True)
class _Site:
    line: int
    repeated: bool  # inside a loop, a comprehension or a function: run any number of times


_REPEATING = (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
              ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _backward_sites(tree: ast.AST) -> list[_Site]:
    sites: list[_Site] = []

    def visit(node: ast.AST, repeated: bool) -> None:
        if isinstance(node, ast.Call) and _is_backward(node.func):
            sites.append(_Site(node.lineno, repeated))
        for child in ast.iter_child_nodes(node):
            visit(child, repeated or isinstance(node, _REPEATING))

    visit(tree, False)
    return sites


def _is_backward(func: ast.expr) -> bool:
    """`y.backward(…)`, `torch.autograd.backward(…)`."""
    return isinstance(func, ast.Attribute) and func.attr == "backward"


def _dotted(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except (ValueError, RecursionError):
        return ""


def _autograd_grad(node: ast.AST) -> bool:
    if isinstance(node, ast.Call):
        name = _dotted(node.func)
        return name.endswith("autograd.grad")
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").endswith("autograd") and any(alias.name == "grad" for alias in node.names)
    return False


def _torch_func(node: ast.AST) -> bool:
    if isinstance(node, ast.Attribute):
        return _dotted(node) in ("torch.func", "functorch")
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [alias.name for alias in node.names]
        return any(module.startswith(("torch.func", "functorch")) for module in modules)
    return False


def _data(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "data"


def _detach(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
        "detach", "detach_")


def _no_grad(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in ("no_grad", "inference_mode")) or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "set_grad_enabled")


def _retain_graph(node: ast.AST) -> bool:
    return isinstance(node, ast.keyword) and node.arg == "retain_graph" and not (
        isinstance(node.value, ast.Constant) and node.value.value in (False, None))


_USES: dict[str, Callable[[ast.AST], bool]] = {
    "torch.autograd.grad": _autograd_grad,
    "torch.func": _torch_func,
    ".data": _data,
    "detach": _detach,
    "no_grad": _no_grad,
    "retain_graph": _retain_graph,
}


def _lines_text(lines: list[int]) -> str:
    if len(lines) == 1:
        return f"line {lines[0]}"
    return "lines " + ", ".join(map(str, lines[:-1])) + f" and {lines[-1]}"


def _lines_quoted(lines: list[int], facts: SourceFacts) -> str:
    return facts.quoted(lines[0]) if len(lines) == 1 else _lines_text(lines)
