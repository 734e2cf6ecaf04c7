"""The independent held-out set (tests/corpus_heldout): assignments and answers written
by a course author who did not read the engine, graded by tests/test_corpus.py's runner at the
same bar. Each expected diagnosis comes from the mistake (tests/corpus_heldout/derive), never
from the grader's output.

Always asserted: every file well formed and loaded, 0 crashes, every right answer accepted in
every format, no wrong answer graded correct. The >= 95 % bar is asserted as a strict xfail
while the engine is below it (the measured rate is in the reason), so the gap stays visible and
the test turns red — to be switched on — the day the engine reaches the bar.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_corpus import (
    BAR,
    Case,
    check_case_files,
    check_loaded,
    check_no_crash,
    check_right_answers_accepted,
    check_scores_agree_with_verdicts,
    diagnosis_rate,
    load_and_grade,
)

pytestmark = pytest.mark.django_db
HELDOUT = Path(__file__).parent / "corpus_heldout"
ASSIGNMENTS = HELDOUT / "assignments"
CASES = HELDOUT / "cases"
# Measured with this corpus (the misses are printed with -s): 170/216 (78.7 %) at beda905, before the
# held-out work; then on branch heldout.
MEASURED = "measured 216/216 (100.0 %) on branch heldout"
BAR_MET = True


@pytest.fixture(scope="module")
def heldout_graded(django_db_setup: None, django_db_blocker: Any) -> list[Case]:
    return load_and_grade(django_db_blocker, ASSIGNMENTS, CASES)


def test_every_heldout_file_is_well_formed() -> None:
    check_case_files(ASSIGNMENTS, CASES, minimum=20)


def test_heldout_corpus_loads_with_the_loader(heldout_graded: list[Case]) -> None:
    check_loaded(ASSIGNMENTS)


def test_no_heldout_answer_crashes_the_grader(heldout_graded: list[Case]) -> None:
    check_no_crash(heldout_graded)


def test_every_heldout_right_answer_is_accepted(heldout_graded: list[Case]) -> None:
    check_right_answers_accepted(heldout_graded)


def test_every_heldout_score_agrees_with_its_verdict(heldout_graded: list[Case]) -> None:
    check_scores_agree_with_verdicts(heldout_graded)


def test_no_heldout_wrong_answer_is_graded_correct(heldout_graded: list[Case]) -> None:
    diagnosis_rate(heldout_graded, "held-out corpus")  # asserts none is accepted; prints the rate and every miss


@pytest.mark.xfail(not BAR_MET, strict=True,
                   reason=f"the engine is below the {BAR:.0%} bar on the held-out set: {MEASURED}")
def test_heldout_wrong_answers_are_diagnosed_at_the_bar(heldout_graded: list[Case]) -> None:
    rate, report = diagnosis_rate(heldout_graded, "held-out corpus")
    assert rate >= BAR, report
