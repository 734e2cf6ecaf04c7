"""The corpus: assignments no engine code was written for (tests/corpus/assignments)
and, per assignment, right answers in every accepted format and realistic wrong answers
whose expected diagnosis comes from the mistake (tests/corpus/derive computes each number).

Bar: 0 crashes, every right answer accepted, >= 95 % of wrong answers diagnosed with the
expected kind and, where the case gives them, the edge (wrong_local_derivative, dead_branch)
or the set of paths (the path kinds); `accept` lists genuinely equivalent kinds.
"""

from __future__ import annotations

import io
import json
import time
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db
CORPUS = Path(__file__).parent / "corpus"
ASSIGNMENTS = CORPUS / "assignments"
CASES = CORPUS / "cases"
BAR = 0.95
KINDS = {
    "missing_path", "extra_path", "product_of_paths", "sign_error", "dead_branch", "accumulation",
    "untracked_leaf", "seed_vector", "shape", "forward_value", "wrong_local_derivative", "two_mistakes",
    "unknown",
}
EDGE_KINDS = {"wrong_local_derivative", "dead_branch"}
PATH_KINDS = {"missing_path", "extra_path", "product_of_paths", "sign_error"}
LOADER_OUTPUT: list[io.StringIO] = []
CASE_FIELDS = {"part", "answer", "mistake", "kind", "edge", "paths", "accept", "components"}


@dataclass
class Case:
    slug: str
    part: str
    answer: str
    expected: dict[str, Any] = field(default_factory=dict)  # empty for a right answer
    got: dict[str, Any] | None = None
    crash: str = ""

    def __repr__(self) -> str:  # short in pytest's tracebacks
        return f"Case({self.slug} {self.part}={self.answer!r})"

    @property
    def right(self) -> bool:
        return not self.expected


def corpus_cases(folder: Path = CASES) -> list[Case]:
    cases = []
    for path in sorted(folder.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for item in data.get("right", []):
            cases.append(Case(path.stem, item["part"], item["answer"]))
        for item in data.get("wrong", []):
            cases.append(Case(path.stem, item["part"], item["answer"], expected=item))
    return cases


def component_matches(expected: dict[str, Any], got: dict[str, Any]) -> bool:
    """The kind (or an accepted alternative), then what that kind names: the edge for the
    edge kinds, the set of paths for the path kinds (a case giving both accepts either)."""
    kind = got.get("kind")
    if kind not in [expected["kind"], *expected.get("accept", [])]:
        return False
    if kind in EDGE_KINDS:
        return "edge" not in expected or list(got.get("edge") or []) == expected["edge"]
    if kind in PATH_KINDS and "paths" in expected:
        return {tuple(p) for p in got.get("paths") or []} == {tuple(p) for p in expected["paths"]}
    return True


def diagnosis_matches(expected: dict[str, Any], got: dict[str, Any]) -> bool:
    if not component_matches(expected, got):
        return False
    if expected["kind"] != "two_mistakes" or got.get("kind") != "two_mistakes":
        return True
    mistakes = list(got.get("mistakes") or [])
    wanted = list(expected.get("components", []))
    if len(mistakes) != len(wanted):
        return False
    return any(all(component_matches(w, m) for w, m in zip(wanted, order, strict=True))
               for order in (mistakes, mistakes[::-1]))


def grade_rounds(cases: list[Case]) -> None:
    """One `grade` call answers one case per part of an assignment: fewer calls, same engine."""
    pending: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for case in cases:
        pending[(case.slug, case.part)].append(case)
    by_slug: dict[str, list[list[Case]]] = defaultdict(list)
    for (slug, _), queue in pending.items():
        by_slug[slug].append(queue)
    for slug, queues in by_slug.items():
        for depth in range(max(len(q) for q in queues)):
            batch = [q[depth] for q in queues if depth < len(q)]
            grade_batch(slug, batch)


def grade_batch(slug: str, batch: list[Case]) -> None:
    out = io.StringIO()
    try:
        call_command("grade", slug, *(f"{c.part}={c.answer}" for c in batch), "--json", stdout=out)
        parts = {part["part"]: part for part in json.loads(out.getvalue())["parts"]}
    except BaseException as exc:  # a crash is a finding, reported per case
        if len(batch) > 1:  # find which answer crashed
            for case in batch:
                grade_batch(slug, [case])
            return
        batch[0].crash = f"{type(exc).__name__}: {exc}"[:200]
        return
    for case in batch:
        part = parts.get(case.part)
        if part is None or not isinstance(part.get("diagnosis"), dict) or "kind" not in part["diagnosis"]:
            case.crash = f"no diagnosis for {case.part} in the result document"
        else:
            case.got = {**part["diagnosis"], "correct": part.get("correct"), "score": part.get("score"),
                        "max_score": part.get("max_score")}


def load_and_grade(django_db_blocker: Any, assignments: Path, cases_folder: Path) -> list[Case]:
    """A corpus loaded once (committed; each analysis runs the reference once) and graded."""
    cases = corpus_cases(cases_folder)
    with django_db_blocker.unblock():
        started = time.perf_counter()
        LOADER_OUTPUT.append(load_output := io.StringIO())
        try:
            call_command("load_assignments", str(assignments), stdout=load_output, stderr=load_output)
        except CommandError as exc:
            raise CommandError(f"{exc}\n{load_output.getvalue()}") from None
        loaded = time.perf_counter()
        grade_rounds(cases)
    print(f"\n{assignments.parent.name}: loaded in {loaded - started:.1f} s, {len(cases)} answers graded in "
          f"{time.perf_counter() - loaded:.1f} s")
    return cases


@pytest.fixture(scope="module")
def graded(django_db_setup: None, django_db_blocker: Any) -> list[Case]:
    return load_and_grade(django_db_blocker, ASSIGNMENTS, CASES)


def expected_label(case: Case) -> str:
    exp = case.expected
    label = exp["kind"] + (f" {exp['edge']}" if "edge" in exp else "") + (f" {exp['paths']}" if "paths" in exp else "")
    if "components" in exp:
        label += " " + " + ".join(f"{c['kind']} {c.get('edge') or c.get('paths') or ''}" for c in exp["components"])
    return label


def got_label(case: Case) -> str:
    if case.crash:
        return f"CRASH {case.crash}"
    got = case.got or {}
    label = f"{got.get('kind')} edge={got.get('edge')} paths={got.get('paths')}"
    if got.get("mistakes"):
        label += " mistakes=" + "; ".join(f"{m.get('kind')} {m.get('edge') or m.get('paths')}" for m in got["mistakes"])
    return label


def miss_table(cases: list[Case]) -> str:
    rows = [f"{c.slug} | {c.part} | {c.answer} | {expected_label(c) if c.expected else 'correct'} | {got_label(c)}"
            for c in cases]
    return "\n".join(["slug | part | answer | expected | got", *rows])


def per_kind(cases: list[Case]) -> str:
    """Matched / total per expected kind, and how many had at least the kind right."""
    total: Counter[str] = Counter()
    hit: Counter[str] = Counter()
    kind_only: Counter[str] = Counter()
    for case in cases:
        if case.expected:
            kind = case.expected["kind"]
            total[kind] += 1
            hit[kind] += bool(case.got and diagnosis_matches(case.expected, case.got))
            kind_only[kind] += bool(case.got and case.got.get("kind") in [kind, *case.expected.get("accept", [])])
    return "\n".join(f"{kind:24} {hit[kind]:3}/{total[kind]:3}  (kind right: {kind_only[kind]})"
                     for kind in sorted(total))


def check_case_files(assignments: Path, cases_folder: Path, minimum: int) -> None:
    """Every assignment parses, has a case file and is named after its slug; every case names
    a part and is well formed (a known kind, a mistake, an edge or paths where its kind names one)."""
    from catalog.spec import spec_from_file

    specs = {spec.slug: spec for spec in map(spec_from_file, sorted(assignments.glob("*.toml")))}
    assert len(specs) >= minimum, sorted(specs)
    assert sorted(p.stem for p in cases_folder.glob("*.toml")) == sorted(specs), "one case file per assignment"
    for path in sorted(assignments.glob("*.toml")):
        assert path.stem == spec_from_file(path).slug, f"{path.name}: the file is named after its slug"
    for case in corpus_cases(cases_folder):
        assert case.part in {p.key for p in specs[case.slug].parts}, (case.slug, case.part)
        exp = case.expected
        if exp:
            assert set(exp) <= CASE_FIELDS and exp["kind"] in KINDS and exp["mistake"], (case.slug, exp)
            assert exp["kind"] != "wrong_local_derivative" or "edge" in exp, (case.slug, exp)
            assert exp["kind"] != "two_mistakes" or len(exp.get("components", [])) == 2, (case.slug, exp)
            for component in [exp, *exp.get("components", [])]:
                kinds = {component["kind"], *component.get("accept", [])}
                assert "edge" not in component or kinds & EDGE_KINDS, (case.slug, component)
                assert "paths" not in component or kinds & PATH_KINDS, (case.slug, component)


def test_every_corpus_file_loads_and_every_case_names_a_part() -> None:
    check_case_files(ASSIGNMENTS, CASES, minimum=24)


def check_loaded(assignments: Path) -> None:
    from assignments.models import Assignment

    slugs = {p.stem for p in assignments.glob("*.toml")}
    assert set(Assignment.objects.filter(slug__in=slugs).values_list("slug", flat=True)) == slugs
    printed = LOADER_OUTPUT[-1].getvalue()
    for slug in slugs:
        assert f" {slug} ({slug}.toml)" in printed, printed


def test_corpus_loads_with_the_loader(graded: list[Case]) -> None:
    check_loaded(ASSIGNMENTS)


def check_no_crash(graded: list[Case]) -> None:
    crashed = [c for c in graded if c.crash]
    assert not crashed, miss_table(crashed)


def check_right_answers_accepted(graded: list[Case]) -> None:
    refused = [c for c in graded if c.right and not c.crash and not (c.got and c.got.get("correct"))]
    assert not refused, miss_table(refused)


def check_scores_agree_with_verdicts(graded: list[Case]) -> None:
    """No incorrect part with full points, no correct part with less: the score a student sees
    says what the verdict says."""
    disagree = [c for c in graded if c.got and (
        (c.got["correct"] and c.got["score"] < c.got["max_score"])
        or (not c.got["correct"] and c.got["score"] >= c.got["max_score"]))]
    assert graded and all(c.got and "score" in c.got for c in graded if not c.crash)
    assert not disagree, "\n".join(f"{c!r}: correct={c.got and c.got['correct']} "
                                   f"{c.got and c.got['score']}/{c.got and c.got['max_score']}" for c in disagree)


def test_every_score_agrees_with_its_verdict(graded: list[Case]) -> None:
    check_scores_agree_with_verdicts(graded)


def test_no_answer_crashes_the_grader(graded: list[Case]) -> None:
    check_no_crash(graded)


def test_every_right_answer_is_accepted_in_every_format(graded: list[Case]) -> None:
    check_right_answers_accepted(graded)


def diagnosis_rate(graded: list[Case], name: str) -> tuple[float, str]:
    """The share of wrong answers diagnosed with their mistake (none may be graded correct),
    printed with the per-kind counts, and the report of the misses for an assertion message."""
    wrong = [c for c in graded if c.expected and not c.crash]
    accepted = [c for c in wrong if c.got and c.got.get("correct")]
    assert not accepted, "wrong answers graded correct:\n" + miss_table(accepted)
    missed = [c for c in wrong if not (c.got and diagnosis_matches(c.expected, c.got))]
    rate = 1 - len(missed) / len(wrong)
    print(f"\n{name}: {len(wrong) - len(missed)}/{len(wrong)} wrong answers diagnosed ({rate:.1%})\n" + per_kind(wrong))
    if missed:
        print(miss_table(missed))
    return rate, f"{rate:.1%} diagnosed (bar {BAR:.0%}); per kind:\n{per_kind(wrong)}\n" + miss_table(missed)


def test_wrong_answers_are_diagnosed_with_the_mistake(graded: list[Case]) -> None:
    rate, report = diagnosis_rate(graded, "corpus")
    assert rate >= BAR, report


def test_every_message_keeps_the_words_rules(graded: list[Case]) -> None:
    """The message rules on every diagnosis kind the catalog and the corpus can produce: each
    hypothesis's own message, the diagnosis of its number, an unknown, and every corpus answer
    graded through the real pipeline (formula parts included)."""
    from tests.message_words import from_document, problems, rendered

    seen, analyses = students_view()
    found: list[str] = []
    kinds: Counter[str] = Counter()
    for slug, analysis in analyses.items():
        for part in analysis.parts:
            for item in rendered(slug, analysis, part):
                kinds[item.kind] += 1
                found += problems(item, seen[slug])
    for case in graded:
        if case.got and not case.got.get("correct"):
            item = from_document(case.slug, case.part, case.got)
            kinds[item.kind] += 1
            found += problems(item, seen[case.slug])
    missing = KINDS - {"two_mistakes"} - set(kinds)
    assert not missing, f"never rendered: {sorted(missing)}"
    assert not found, f"{len(found)} messages break the rules:\n" + "\n".join(sorted(set(found))[:40])


def students_view() -> tuple[dict[str, Any], dict[str, Any]]:
    """Per assignment (seed catalog and corpus): what the student sees, and the seed analysis."""
    from assignments.models import Assignment
    from catalog.spec import spec_from_file
    from chainrule import Analysis
    from grading.variants import variant_get
    from tests.message_words import seen_by_student

    files = [*sorted((Path(__file__).parents[1] / "assignments" / "catalog").glob("*.toml")),
             *sorted(ASSIGNMENTS.glob("*.toml"))]
    seen, analyses = {}, {}
    for path in files:
        spec = spec_from_file(path)
        assignment = Assignment.objects.get(slug=spec.slug)
        variant = variant_get(assignment=assignment, params=dict(assignment.params))
        analysis = Analysis.from_json(variant.analysis_data())
        symbols = {name for part in spec.parts for name in getattr(part.config, "variables", {})}
        seen[spec.slug] = seen_by_student(spec.slug, spec.statement, spec.params, analysis, symbols)
        analyses[spec.slug] = analysis
    return seen, analyses
