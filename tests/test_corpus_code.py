"""The code corpus (tests/corpus_code): program and fix parts written by a course author who did
not read the engine — custom autograd Functions, hooks, gradient penalties, micro-batches, a
hand-written SGD loop, LoRA, … — with right programs and wrong programs whose expected
diagnosis (kind, and the student's line where the mistake is) comes from the mistake
(tests/corpus_code/derive checks each program's gradients in plain torch).

Each program is graded as a student's file through `manage.py grade SLUG --code-file PART=FILE
--json`. Always asserted: every file well formed and loaded, 0 crashes, every right program
correct with full points, no wrong program correct or with full points. The bars — the
diagnosis kind for >= 95 % of wrong programs, the mistake's line among the diagnosis's `lines`
for >= 90 % — are strict xfails while the engine is below them (the measured figures are in
MEASURED), so the gap stays visible and the test turns red the day a bar is reached.
"""

from __future__ import annotations

import io
import json
import time
import tomllib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connections

from tests.test_corpus import EDGE_KINDS, LOADER_OUTPUT, PATH_KINDS, check_loaded, component_matches

pytestmark = pytest.mark.django_db
CODE = Path(__file__).parent / "corpus_code"
ASSIGNMENTS = CODE / "assignments"
CASES = CODE / "cases"
KIND_BAR = 0.95
LINE_BAR = 0.90
# The diagnosis kinds of docs/diagnosis.md's table, and three this corpus asks the engine for.
KINDS = {
    "missing_path", "extra_path", "product_of_paths", "sign_error", "dead_branch", "accumulation",
    "untracked_leaf", "seed_vector", "shape", "forward_value", "wrong_local_derivative", "other_gradient",
    "two_mistakes", "not_autograd", "code_error", "unknown", "custom_function", "hook", "higher_order",
}
CASE_FIELDS = {"part", "source", "lines", "mistake", "kind", "accept", "edge", "paths"}
# Measured with this corpus before any engine work (the misses are printed with -s), at a2d0454 on
# branch wip-corpus22 (main at c38006c); 40 of 43 right programs accepted then.
MEASURED = ("measured kind 61/81 (75.3 %), line 8/81 (9.9 %) before any engine work; kind 81/81 (100 %), "
            "line 81/81 (100 %) on branch wip-code22b (the student's graph)")
KIND_BAR_MET = True
LINE_BAR_MET = True


@dataclass
class CodeCase:
    slug: str
    part: str
    source: str
    expected: dict[str, Any] = field(default_factory=dict)  # empty for a right program
    got: dict[str, Any] | None = None
    crash: str = ""

    def __repr__(self) -> str:  # short in pytest's tracebacks
        return f"CodeCase({self.slug} {self.part}: {self.expected.get('mistake', 'right')!r})"

    @property
    def right(self) -> bool:
        return not self.expected

    @property
    def kind_matches(self) -> bool:
        return bool(self.got) and component_matches(self.expected, self.got or {})

    @property
    def line_matches(self) -> bool:
        got = (self.got or {}).get("lines") or []
        return bool(set(got) & set(self.expected["lines"]))


def code_cases() -> list[CodeCase]:
    cases = []
    for path in sorted(CASES.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        cases += [CodeCase(path.stem, item["part"], item["source"]) for item in data.get("right", [])]
        cases += [CodeCase(path.stem, item["part"], item["source"], expected=item) for item in data.get("wrong", [])]
    return cases


def grade_case(case: CodeCase, folder: Path) -> None:
    source = folder / f"{case.slug}-{id(case)}.py"
    source.write_text(case.source, encoding="utf-8")
    out = io.StringIO()
    try:
        call_command("grade", case.slug, "--code-file", f"{case.part}={source}", "--json", stdout=out)
        parts = {part["part"]: part for part in json.loads(out.getvalue())["parts"]}
    except BaseException as exc:  # a crash is a finding, reported per case
        case.crash = f"{type(exc).__name__}: {exc}"[:200]
        return
    part = parts.get(case.part)
    if part is None or "correct" not in part:
        case.crash = f"no result for {case.part} in the result document"
        return
    diagnosis = part.get("diagnosis") if isinstance(part.get("diagnosis"), dict) else {}
    case.got = {**diagnosis, "correct": part.get("correct"), "score": part.get("score"),
                "max_score": part.get("max_score")}
    if not case.right and "kind" not in diagnosis:
        case.crash = f"no diagnosis for a wrong {case.part}"


def graded_in_thread(case: CodeCase, folder: Path) -> None:
    try:
        grade_case(case, folder)
    finally:
        connections.close_all()  # this thread's own


@pytest.fixture(scope="module")
def code_graded(django_db_setup: None, django_db_blocker: Any,
                tmp_path_factory: pytest.TempPathFactory) -> list[CodeCase]:
    """The corpus loaded once (each reference runs once) and every program graded, one sandbox job each."""
    cases = code_cases()
    folder = tmp_path_factory.mktemp("corpus_code")
    with django_db_blocker.unblock():
        started = time.perf_counter()
        LOADER_OUTPUT.append(load_output := io.StringIO())
        try:
            call_command("load_assignments", str(ASSIGNMENTS), stdout=load_output, stderr=load_output)
        except CommandError as exc:
            raise CommandError(f"{exc}\n{load_output.getvalue()}") from None
        loaded = time.perf_counter()
        with ThreadPoolExecutor(max_workers=2) as pool:  # as the sandbox's two slots take them
            list(pool.map(lambda case: graded_in_thread(case, folder), cases))
    print(f"\ncorpus_code: loaded in {loaded - started:.1f} s, {len(cases)} programs graded in "
          f"{time.perf_counter() - loaded:.1f} s")
    return cases


def test_every_code_case_file_is_well_formed() -> None:
    """One case file per assignment, named after its slug; every case names a code part and
    (wrong) a known kind, its mistake, the lines of its source where the mistake is, and an edge
    or paths only where its kind names one."""
    specs = {path.stem: tomllib.loads(path.read_text(encoding="utf-8")) for path in ASSIGNMENTS.glob("*.toml")}
    assert len(specs) >= 12 and all(spec["slug"] == stem for stem, spec in specs.items())
    assert sorted(p.stem for p in CASES.glob("*.toml")) == sorted(specs), "one case file per assignment"
    modes = Counter(p["config"]["mode"] for spec in specs.values() for p in spec["parts"] if p["kind"] == "code")
    assert modes["program"] >= 4 and modes["fix"] >= 4, modes
    cases = code_cases()
    assert len(cases) >= 80 and sum(c.right for c in cases) >= 15 and sum(not c.right for c in cases) >= 65
    for case in cases:
        code_parts = {p["key"] for p in specs[case.slug]["parts"] if p["kind"] == "code"}
        assert case.part in code_parts, (case.slug, case.part)
        exp = case.expected
        if not exp:
            continue
        assert set(exp) <= CASE_FIELDS and exp["kind"] in KINDS and exp["mistake"], (case.slug, exp)
        assert set(exp.get("accept", [])) <= KINDS, (case.slug, exp)
        rows = case.source.count("\n") + 1
        assert exp["lines"] and all(1 <= line <= rows for line in exp["lines"]), (case.slug, exp)
        kinds = {exp["kind"], *exp.get("accept", [])}
        assert "edge" not in exp or kinds & EDGE_KINDS, (case.slug, exp)
        assert "paths" not in exp or kinds & PATH_KINDS, (case.slug, exp)


def test_code_corpus_loads_with_the_loader(code_graded: list[CodeCase]) -> None:
    check_loaded(ASSIGNMENTS)


def test_no_code_program_crashes_the_grader(code_graded: list[CodeCase]) -> None:
    crashed = [c for c in code_graded if c.crash]
    assert not crashed, miss_table(crashed)


def test_every_right_program_gets_full_points(code_graded: list[CodeCase]) -> None:
    refused = [c for c in code_graded if c.right and not c.crash
               and not (c.got and c.got["correct"] and c.got["score"] >= c.got["max_score"])]
    assert not refused, miss_table(refused)


def test_no_wrong_program_is_graded_correct(code_graded: list[CodeCase]) -> None:
    accepted = [c for c in code_graded if not c.right and c.got
                and (c.got["correct"] or c.got["score"] >= c.got["max_score"])]
    assert not accepted, miss_table(accepted)


def expected_label(case: CodeCase) -> str:
    exp = case.expected
    kinds = "/".join([exp["kind"], *exp.get("accept", [])])
    edge = f" edge={exp['edge']}" if "edge" in exp else ""
    return kinds + edge + (f" paths={exp['paths']}" if "paths" in exp else "")


def miss_table(cases: list[CodeCase]) -> str:
    rows = []
    for c in cases:
        got = c.got or {}
        expected = "correct" if c.right else f"{expected_label(c)} lines={c.expected['lines']}"
        found = f"CRASH {c.crash}" if c.crash else (
            f"{got.get('kind')} edge={got.get('edge')} lines={got.get('lines')} correct={got.get('correct')}")
        message = " ".join(str(got.get("message", "")).split())[:300]
        rows.append(f"{c.slug} | {c.part} | {c.expected.get('mistake', 'right')} | {expected} | {found} | {message}")
    return "\n".join(["slug | part | mistake | expected | got | message", *rows])


def rates(graded: list[CodeCase]) -> tuple[float, float, str]:
    """The kind and line rates over the wrong programs, per expected kind, with every miss."""
    wrong = [c for c in graded if not c.right and not c.crash]
    total: Counter[str] = Counter()
    kind_hit: Counter[str] = Counter()
    line_hit: Counter[str] = Counter()
    for case in wrong:
        total[case.expected["kind"]] += 1
        kind_hit[case.expected["kind"]] += case.kind_matches
        line_hit[case.expected["kind"]] += case.line_matches
    kind_rate = sum(kind_hit.values()) / len(wrong)
    line_rate = sum(line_hit.values()) / len(wrong)
    lines = [f"code corpus: kind {sum(kind_hit.values())}/{len(wrong)} ({kind_rate:.1%}), "
             f"line {sum(line_hit.values())}/{len(wrong)} ({line_rate:.1%})"]
    lines += [f"{kind:24} kind {kind_hit[kind]:3}/{total[kind]:3}  line {line_hit[kind]:3}/{total[kind]:3}"
              for kind in sorted(total)]
    kind_missed = [c for c in wrong if not c.kind_matches]
    line_missed = [c for c in wrong if not c.line_matches]
    if kind_missed:
        lines += ["", "kind misses:", miss_table(kind_missed)]
    if line_missed:
        lines += ["", "line misses:", miss_table(line_missed)]
    return kind_rate, line_rate, "\n".join(lines)


def test_code_corpus_rates_are_printed(code_graded: list[CodeCase]) -> None:
    *_, report = rates(code_graded)
    print("\n" + report)
    assert report


@pytest.mark.xfail(not KIND_BAR_MET, strict=True,
                   reason=f"the engine is below the {KIND_BAR:.0%} kind bar on the code corpus: {MEASURED}")
def test_wrong_programs_are_diagnosed_with_their_kind_at_the_bar(code_graded: list[CodeCase]) -> None:
    kind_rate, _, report = rates(code_graded)
    assert kind_rate >= KIND_BAR, report


@pytest.mark.xfail(not LINE_BAR_MET, strict=True,
                   reason=f"the engine is below the {LINE_BAR:.0%} line bar on the code corpus: {MEASURED}")
def test_wrong_programs_are_diagnosed_on_their_line_at_the_bar(code_graded: list[CodeCase]) -> None:
    _, line_rate, report = rates(code_graded)
    assert line_rate >= LINE_BAR, report
