"""Courses, roles and assignments are the base the other apps build on (docs/architecture.md).

Every app imports assignments; assignments imports none of them — not at module level, not inside a
function, not as a dotted path in a string handed to import_string. import-linter checks the other
layers (pyproject.toml), and scripts/check_cycles.py that no two modules import each other.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ABOVE = ("grading", "catalog", "authoring", "grader", "courseops", "lti")  # built on assignments, never the other way
DOTTED_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")  # "grading.reference.SandboxRunner"


def _imported_modules(source: str) -> list[tuple[int, str]]:
    """(line, module) for every import statement and every dotted-path string literal."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and DOTTED_RE.match(node.value):
            found.append((node.lineno, node.value))
    return found


def _violations(package: Path) -> list[str]:
    return [f"{path.relative_to(package.parent)}:{line}: {module}"
            for path in sorted(package.rglob("*.py"))
            for line, module in _imported_modules(path.read_text(encoding="utf-8"))
            if module.split(".")[0] in ABOVE]


def test_assignments_imports_none_of_the_apps_built_on_it() -> None:
    assert _violations(ROOT / "assignments") == []


@pytest.mark.parametrize("source", [
    "from grader.workflow import submission_create\n",
    "def f():\n    import courseops.regrades\n",
    "RUNNER = 'lti.scores.lti_score_publish_later'\n",
    "import grader\n",
])
def test_the_check_catches_each_way_of_importing_upwards(tmp_path: Path, source: str) -> None:
    package = tmp_path / "assignments"
    package.mkdir()
    (package / "module.py").write_text(source, encoding="utf-8")
    assert len(_violations(package)) == 1
