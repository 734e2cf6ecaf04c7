"""Every code case of every corpus, graded in this process as the worker grades it (the harness run
here, not in the sandbox): the corpus of code assignments (tests/corpus_code), code parts in the other
corpora and the catalogs, and the student programs of the shipped catalog's code parts that the engine
tests use. Shared by the words audit (tests/test_code_words_audit.py)."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from assignments.part_config import CodeConfig, config_parse
from chainrule import Analysis, Diagnosis, analyze_program
from chainrule.answers.code_grading import grade_code
from chainrule.code.harness import run_harness
from chainrule.evaluation_points import evaluation_points

TESTS = Path(__file__).parent
ROOT = TESTS.parent
CORPORA = [TESTS / "corpus_code", TESTS / "corpus", TESTS / "corpus_heldout"]
CATALOGS = [ROOT / "assignments" / "catalog", TESTS / "catalog_extra"]
POINTS = 4


@dataclass(frozen=True)
class CodeAssignment:
    slug: str
    reference: str
    params: dict[str, Any]
    ranges: dict[str, Any]
    parts: dict[str, CodeConfig]


@dataclass
class CodeCase:
    slug: str
    part: str
    source: str
    expected: dict[str, Any] = field(default_factory=dict)  # empty for a right program

    @property
    def right(self) -> bool:
        return not self.expected

    def __repr__(self) -> str:
        return f"CodeCase({self.slug} {self.part} {self.expected.get('mistake', 'right')!r})"


def _fail(name: str, problem: str) -> Exception:
    return ValueError(f"{name}: {problem}")


def code_assignment(path: Path) -> CodeAssignment | None:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    params = data.get("params", {})
    parts = {part["key"]: config_parse("code", part.get("config", {}), params=params, fail=_fail)
             for part in data.get("parts", []) if part.get("kind") == "code"}
    programs = {key: config for key, config in parts.items()
                if isinstance(config, CodeConfig) and config.mode in ("program", "fix")}
    if not programs:
        return None
    return CodeAssignment(data["slug"], data["reference"], params, data.get("ranges", {}), programs)


@cache
def assignments() -> dict[str, CodeAssignment]:
    found: dict[str, CodeAssignment] = {}
    folders = [corpus / "assignments" for corpus in CORPORA] + CATALOGS
    for folder in folders:
        for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
            assignment = code_assignment(path)
            if assignment is not None:
                found[assignment.slug] = assignment
    return found


def corpus_code_cases() -> list[CodeCase]:
    """The right and wrong programs of every corpus's case files whose assignment has a code part."""
    cases: list[CodeCase] = []
    known = assignments()
    for corpus in CORPORA:
        for path in sorted((corpus / "cases").glob("*.toml")) if (corpus / "cases").is_dir() else []:
            if path.stem not in known:
                continue
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            cases += [CodeCase(path.stem, item["part"], item["source"]) for item in data.get("right", [])
                      if "source" in item]
            cases += [CodeCase(path.stem, item["part"], item["source"], item) for item in data.get("wrong", [])
                      if "source" in item]
    return cases


def _vary(assignment: CodeAssignment, config: CodeConfig) -> list[str]:
    if config.vary is not None:
        return list(config.vary)
    return [name for name in assignment.params if name in config.starter]


@cache
def _points_and_analyses(slug: str, part: str) -> tuple[str, tuple[Analysis, ...]]:
    assignment = assignments()[slug]
    config = assignment.parts[part]
    points = evaluation_points(params=assignment.params, ranges=assignment.ranges, count=POINTS,
                               seed=f"audit/{slug}/{part}", vary=_vary(assignment, config))
    if config.reference_error:
        return json.dumps(points), ()
    analyses = tuple(analyze_program(program=assignment.reference, params=point, parts=list(config.reads))
                     for point in points)
    return json.dumps(points), analyses


def graded(case: CodeCase) -> Diagnosis:
    """The part's diagnosis (one per read; the first wrong one for a part that reads several)."""
    assignment = assignments()[case.slug]
    config = assignment.parts[case.part]
    points_json, analyses = _points_and_analyses(case.slug, case.part)
    points = json.loads(points_json)
    report = json.loads(json.dumps(run_harness({"mode": config.mode, "source": case.source,
                                                "reads": list(config.reads), "points": points})))
    diagnoses = grade_code(harness_output=report, analyses=list(analyses), points=points, parts=list(config.reads),
                           returns=None, rel_tol=1e-4, abs_tol=1e-6, reference_error=config.reference_error,
                           source=case.source, requirements=config.requirements,
                           reference_source=assignment.reference)
    wrong = [diagnosis for diagnosis in diagnoses.values() if not diagnosis.correct]
    return wrong[0] if wrong else next(iter(diagnoses.values()))
