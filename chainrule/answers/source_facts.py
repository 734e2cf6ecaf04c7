"""What the worker reads in the student's source itself, without running it (ast): the lines
to quote, where the code calls autograd at all, where it assigns a `.grad`, where each name is
assigned, and the names a function returns. This is the worker's own evidence, independent of
anything the sandbox reports; the source is bounded (chainrule.code_limits.MAX_CODE_CHARS)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

MAX_QUOTED = 80
_AUTOGRAD_CALLS = {"backward", "grad"}  # y.backward(), torch.autograd.backward/grad(), grad() imported
_RETURNS = re.compile(r"->\s*\(?\s*([^)]*?)\s*\)?\s*$")


@dataclass(frozen=True)
class SourceFacts:
    lines: tuple[str, ...]
    parsed: bool = False
    autograd_calls: tuple[int, ...] = ()  # lines that call backward() or autograd.grad()
    grad_assignments: dict[str, tuple[int, ...]] = field(default_factory=dict)  # "x" → lines of x.grad = …
    assignments: dict[str, tuple[int, ...]] = field(default_factory=dict)  # "b" → lines of b = …
    # line → (the tensor, what a new tensor would be): `v.data -= t` → ("v", "v - t"); "" when not a plain `op=`
    data_writes: dict[int, tuple[str, str]] = field(default_factory=dict)
    # line → the tensor whose detach() (or clone()) result the statement throws away: `t.detach()` alone
    discarded: dict[int, str] = field(default_factory=dict)

    def text(self, line: int | None) -> str:
        if line is None or not 1 <= line <= len(self.lines):
            return ""
        text = self.lines[line - 1].strip().replace("`", "'")
        return text if len(text) <= MAX_QUOTED else text[: MAX_QUOTED - 1] + "…"

    def quoted(self, line: int | None) -> str:
        """`line 3 (`b = a.clone()`)`, from the worker's own copy of the source."""
        if line is None:
            return "a line of your code"
        text = self.text(line)
        return f"line {line} (`{text}`)" if text else f"line {line}"


def source_facts(source: str) -> SourceFacts:
    lines = tuple(source.splitlines())
    tree = _parsed(source)
    if tree is None:
        return SourceFacts(lines)
    calls: list[int] = []
    grads: dict[str, list[int]] = {}
    names: dict[str, list[int]] = {}
    writes: dict[int, tuple[str, str]] = {}
    discarded: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr in ("detach", "clone"):
            discarded.setdefault(node.lineno, ast.unparse(node.value.func.value))
        written = _data_write(node)
        if written is not None and isinstance(node, ast.stmt):
            writes.setdefault(node.lineno, written)
        if isinstance(node, ast.Call) and _called_name(node.func) in _AUTOGRAD_CALLS:
            calls.append(node.lineno)
        for target in _targets(node):
            if isinstance(target, ast.Attribute) and target.attr == "grad" and not _is_none(node):
                grads.setdefault(ast.unparse(target.value), []).append(target.lineno)
            elif isinstance(target, ast.Name):
                names.setdefault(target.id, []).append(target.lineno)
    return SourceFacts(lines, True, tuple(sorted(set(calls))), {key: tuple(value) for key, value in grads.items()},
                       {key: tuple(value) for key, value in names.items()}, writes, discarded)


_AUG_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


def _data_write(node: ast.AST) -> tuple[str, str] | None:
    """A write into a tensor's .data (`v.data -= t`, `v.data = …`, `v.data[0] = …`, `v.data.add_(t)`)."""
    for target in _targets(node):
        inner = target.value if isinstance(target, ast.Subscript) else target
        if isinstance(inner, ast.Attribute) and inner.attr == "data":
            tensor = ast.unparse(inner.value)
            op = _AUG_OPS.get(type(node.op)) if isinstance(node, ast.AugAssign) and target is inner else None
            return tensor, f"{tensor} {op} {ast.unparse(node.value)}" if op and isinstance(node, ast.AugAssign) else ""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute):
        method, owner = node.value.func.attr, node.value.func.value
        if method.endswith("_") and not method.startswith("_") and isinstance(owner, ast.Attribute) \
                and owner.attr == "data":
            return ast.unparse(owner.value), ""
    return None


def return_names(source: str, *, function: str, count: int, signature: str | None) -> list[str | None]:
    """What to call each value the function returns: the student's own variable (`return dz_dx, dz_dy`),
    else the name the signature gives (`grad_z(x, y) -> (dz_dx, dz_dy)`), else None."""
    given = _signature_names(signature, count)
    own = _returned_names(source, function, count)
    return [mine or theirs for mine, theirs in zip(own, given, strict=True)]


def signature_names(signature: str | None, count: int) -> list[str | None]:
    """The names a signature gives the return values (`-> (dz_dx, dz_dy)`), or Nones."""
    return _signature_names(signature, count)


def _signature_names(signature: str | None, count: int) -> list[str | None]:
    found = _RETURNS.search(signature or "")
    names = [name.strip() for name in found.group(1).split(",")] if found else []
    if len(names) != count or not all(name.isidentifier() for name in names):
        return [None] * count
    return list(names)


def _parsed(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # the harness reports the syntax error on the student's line


def _returned_names(source: str, function: str, count: int) -> list[str | None]:
    tree = _parsed(source)
    if tree is None:
        return [None] * count
    defined = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == function]
    if not defined:
        return [None] * count
    returned = [_names_of(node.value, count) for node in _own_returns(defined[-1])]
    if not returned or any(names != returned[0] for names in returned):
        return [None] * count
    computed = _computed_names(defined[-1])  # `return y` of a parameter y names no result of the student's
    return [name if name in computed else None for name in returned[0]]


def _computed_names(function: ast.FunctionDef) -> set[str]:
    parameters = {argument.arg for argument in ast.walk(function.args) if isinstance(argument, ast.arg)}
    assigned = {target.id for node in ast.walk(function) for target in _targets(node) if isinstance(target, ast.Name)}
    return assigned - parameters


def _own_returns(function: ast.FunctionDef) -> list[ast.Return]:
    found: list[ast.Return] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _names_of(value: ast.expr | None, count: int) -> list[str | None]:
    items = value.elts if isinstance(value, (ast.Tuple, ast.List)) and count > 1 else [value]
    if len(items) != count:
        return [None] * count
    return [item.id if isinstance(item, ast.Name) else None for item in items]


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    return []


def _is_none(node: ast.AST) -> bool:
    value = getattr(node, "value", None)
    return isinstance(node, ast.Assign) and isinstance(value, ast.Constant) and value.value is None
