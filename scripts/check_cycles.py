"""Import cycles between the project's modules, counting imports inside functions.

import-linter sees module-level imports only; an import written inside a function to break a cycle
at run time still makes two modules depend on each other, so it is counted here. Imports under
`if TYPE_CHECKING:` are not (they never run). Tests, migrations and benchmarks are left out.

    .venv/bin/python scripts/check_cycles.py        # exit 1 and one line per cycle when there are any
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("chainrule", "sandbox", "infra", "assignments", "grading", "catalog", "authoring", "grader",
            "courseops", "lti", "config")
SKIPPED_DIRS = {"tests", "migrations"}


def module_files(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Module name → file, for every module of the packages."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if SKIPPED_DIRS & set(parts):
                continue
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[str, list[str]]]:
    """(imported module, names taken from it) for every import that runs, wherever it is written."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base, [alias.name for alias in node.names]
        stack.extend(ast.iter_child_nodes(node))


def import_graph(files: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the project modules it imports (the most specific module each import names)."""
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for target, names in _imports(tree, name, path.name == "__init__.py"):
            submodules = [f"{target}.{each}" for each in names if f"{target}.{each}" in files]
            for found in submodules or ([target] if target in files else []):
                if found != name:
                    graph[name].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def main() -> int:
    found = cycles(import_graph(module_files()))
    for component in found:
        print("import cycle: " + " ↔ ".join(component))
    if not found:
        print(f"no import cycles between {len(module_files())} modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
