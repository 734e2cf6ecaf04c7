"""One student cannot stall the service, against the real worker pools,
Redis and the sandbox: a flood of looping code waits in the database while another
student's numbers and code are graded."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest

from assignments.models import Assignment
from conftest import Person
from grader import fairness, workflow
from grader.models import Submission
from grader.policy import RateLimited
from infra import clock, lanes
from tests.drills import wait_graded

LOOP = "def grad_z(x, y):\n    while True:\n        pass\n"
RIGHT = "def grad_z(x, y):\n    return y + 2 * x, x\n"


def _create(person: Person, *, answers: dict[str, str] | None = None, code: dict[str, str] | None = None,
            slug: str = "visual-walkthrough") -> Submission:
    return workflow.submission_create(student=person.user, assignment=Assignment.objects.get(slug=slug),
                                      answers=answers or {}, code=code or {})


def _unfinished(ids: list[int]) -> int:
    return Submission.objects.filter(id__in=ids, status__in=["queued", "running"]).count()


@pytest.mark.integration
def test_a_flood_of_looping_code_does_not_delay_another_student(
    live_db: None, worker: Any, student: Person, other_student: Person
) -> None:
    flood = [_create(student, code={"grad_z": LOOP}).id for _ in range(30)]
    try:
        time.sleep(0.3)
        held = Submission.objects.filter(id__in=flood, enqueued_at__isnull=True).count()
        assert held >= 29  # one code job of this student in flight; the rest wait in the database

        started = time.monotonic()
        numeric = _create(other_student, answers={"x.grad": "7"})
        [graded] = wait_graded([numeric.id], timeout=30)
        numeric_seconds = time.monotonic() - started
        assert graded.result.score == 1.0
        assert _unfinished(flood) >= 28, "the other student's number waited for the flood"

        started = time.monotonic()
        code = _create(other_student, code={"grad_z": RIGHT})
        [graded] = wait_graded([code.id], timeout=30)
        code_seconds = time.monotonic() - started
        assert graded.result.score == 2.0
        assert _unfinished(flood) >= 27, "the other student's code waited for the flood"
        print(f"\nwhile 30 loops are queued: numeric graded in {numeric_seconds:.2f} s, code in {code_seconds:.2f} s")

        # The finishing task releases the next held one: the flood advances, one job at a time.
        deadline = time.monotonic() + 40
        most_in_flight = 0
        while time.monotonic() < deadline and not (
                _unfinished(flood) <= 29 and fairness.code_in_flight(student_id=student.user.pk) == 1):
            most_in_flight = max(most_in_flight, fairness.code_in_flight(student_id=student.user.pk))
            time.sleep(0.1)
        assert _unfinished(flood) <= 29 and most_in_flight <= 1
        assert Submission.objects.filter(id__in=flood, enqueued_at__isnull=True).count() <= 28  # the next one went
        graded_loop = Submission.objects.filter(id__in=flood, status="graded").select_related("result").first()
        assert graded_loop is not None
        [part] = [p for p in graded_loop.result.document["parts"] if p["part"] == "grad_z"]
        assert part["correct"] is False  # the loop was stopped and graded as the student's timeout
        assert graded_loop.sandbox_seconds >= 1  # its wall time counts against the student's budget
    finally:  # the rest of the flood is not this session's business: take it off the lane
        Submission.objects.filter(id__in=flood, enqueued_at__isnull=True).update(
            status="error", error_reason="cancelled by the test", attempt=None)


# Right at every point (the added term is finite, times 0), but SymPy must build the nested term to prove it:
# about 2.7 s of CPU on the development machine, past the check's 2 s, so it ends "too complex to check".
EXPENSIVE = "y + 2x + 0*sinh(sin(e^sin(e^sin(e^sin(e^sin(e^sin(e^(x-log(y)*tan(2)))))))))^-100"


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


@pytest.mark.integration
def test_a_flood_of_expensive_formulas_does_not_delay_another_student(
    live_db: None, worker: Any, student: Person, other_student: Person, settings: Any
) -> None:
    """Formulas whose check needs the sandbox take the code lane's cap and budget: one student sending them
    at the rate limit holds one sandbox slot, and the numeric lane never waits on their checks."""
    flood: list[int] = []
    try:
        for _ in range(30):  # as fast as the rate limit lets them
            flood.append(_create(student, answers={"dz_dx": EXPENSIVE}).id)
        assert set(Submission.objects.filter(id__in=flood).values_list("lane", flat=True)) == {lanes.CODE}
        time.sleep(0.3)
        assert Submission.objects.filter(id__in=flood, enqueued_at__isnull=True).count() >= 29  # one in flight

        numeric_seconds = []
        for value in ("7", "4", "7", "5", "7", "6", "7", "4", "7", "3"):
            started = time.monotonic()
            [graded] = wait_graded([_create(other_student, answers={"x.grad": value}).id], timeout=30)
            numeric_seconds.append(time.monotonic() - started)
            assert graded.status == "graded"
        code_seconds = []
        for _ in range(3):
            started = time.monotonic()
            [graded] = wait_graded([_create(other_student, code={"grad_z": RIGHT}).id], timeout=30)
            code_seconds.append(time.monotonic() - started)
            assert graded.result.score == 2.0
        assert _unfinished(flood) >= 20, "the flood was not held back"
        print(f"\nwhile 30 expensive formulas are queued: numeric graded in p95 {_p95(numeric_seconds):.2f} s "
              f"(max {max(numeric_seconds):.2f} s, n={len(numeric_seconds)}), code in max {max(code_seconds):.2f} s")
        assert _p95(numeric_seconds) <= 1.0 and max(code_seconds) <= 3.0

        deadline = time.monotonic() + 30  # the first formula's check ends and counts against the budget
        while time.monotonic() < deadline and not Submission.objects.filter(id__in=flood, status="graded").exists():
            time.sleep(0.2)
        checked = Submission.objects.filter(id__in=flood, status="graded").select_related("result").first()
        assert checked is not None and checked.sandbox_seconds > 0.5
        assert fairness.code_in_flight(student_id=student.user.pk) <= 1
    finally:
        Submission.objects.filter(id__in=flood, status="queued").update(
            status="error", error_reason="cancelled by the test", attempt=None)


@pytest.mark.django_db
def test_only_formulas_that_may_need_the_sandbox_take_the_code_lane(student: Person) -> None:
    walkthrough = Assignment.objects.get(slug="visual-walkthrough")
    assert fairness.lane_of(code={}, answers={"x.grad": "4"}, assignment=walkthrough) == lanes.NUMERIC
    assert fairness.lane_of(code={}, answers={"dz_dx": "y + 2*x"}, assignment=walkthrough) == lanes.CODE
    assert fairness.lane_of(code={}, answers={"x.grad": "4", "dz_dx": " "}, assignment=walkthrough) == lanes.NUMERIC
    assert _create(student, answers={"dz_dx": "y + 2*x"}).lane == lanes.CODE
    assert _create(student, answers={"x.grad": "4"}).lane == lanes.NUMERIC


@pytest.mark.django_db
def test_a_numeric_drain_hands_a_formula_that_needs_the_sandbox_to_the_code_lane(
        student: Person, monkeypatch: Any) -> None:
    """Rows queued on the numeric lane before formulas took the code lane are moved, not checked there."""
    from grader.workflow import claim, grade

    monkeypatch.setattr("grading.formula_check.formula_equivalence_check",
                        lambda *a: pytest.fail("a numeric drain ran a sandbox job"))
    formula = _create(student, answers={"dz_dx": "y + 2*x"})
    Submission.objects.filter(id=formula.id).update(lane=lanes.NUMERIC, enqueued_at=clock.now())
    rows = [row for row in claim.batch_claim() if row.id == formula.id]
    assert len(rows) == 1
    assert grade._batch_graded(rows) == 1
    moved = Submission.objects.get(id=formula.id)
    assert (moved.lane, moved.status, moved.enqueued_at, moved.deliveries) == (lanes.CODE, "queued", None, 0)


@pytest.mark.django_db
def test_held_code_is_released_oldest_first_into_free_slots(student: Person, settings: Any) -> None:
    settings.GRADER_CODE_IN_FLIGHT = 2
    enqueued: list[int] = []
    ids = [_create(student, code={"grad_z": RIGHT}).id for _ in range(4)]  # no on_commit: all held
    assert fairness.held_release(student_id=student.user.pk, enqueue=lambda i, lane: enqueued.append(i)) == ids[:2]
    assert fairness.held_release(student_id=student.user.pk, enqueue=lambda i, lane: enqueued.append(i)) == []
    Submission.objects.filter(id=ids[0]).update(status="graded")
    assert fairness.held_release(student_id=student.user.pk, enqueue=lambda i, lane: enqueued.append(i)) == [ids[2]]
    assert enqueued == ids[:3]


@pytest.mark.django_db
def test_a_student_over_the_sandbox_budget_waits(student: Person, settings: Any) -> None:
    settings.GRADER_SANDBOX_BUDGET_SECONDS = 10
    spent = _create(student, code={"grad_z": RIGHT})
    Submission.objects.filter(id=spent.id).update(status="graded", sandbox_seconds=11, graded_at=clock.now())
    waiting = _create(student, code={"grad_z": RIGHT})
    assert fairness.held_release(student_id=student.user.pk, enqueue=lambda i, lane: None) == []
    Submission.objects.filter(id=spent.id).update(graded_at=clock.now() - timedelta(hours=1))  # window moved
    assert fairness.held_release(student_id=student.user.pk, enqueue=lambda i, lane: None) == [waiting.id]


@pytest.mark.django_db
def test_the_rate_limit_counts_every_assignment_of_the_student(student: Person, settings: Any) -> None:
    settings.GRADER_RATE_LIMIT = 4
    for slug in ("visual-walkthrough", "detach", "dead-relu", "accumulation"):
        _create(student, answers={"x.grad": "1"}, slug=slug)
    with pytest.raises(RateLimited):
        _create(student, answers={"x.grad": "1"}, slug="positive-gradient")


@pytest.mark.django_db
def test_the_sweeper_releases_held_code_and_runs_on_its_own_queue(student: Person, monkeypatch: Any) -> None:
    from config.celery_app import app

    sent: list[tuple[int, str]] = []
    monkeypatch.setattr("grader.workflow.queueing.submission_enqueue",
                        lambda submission_id, lane: sent.append((submission_id, lane)))
    held = _create(student, code={"grad_z": RIGHT})
    assert held.id in workflow.submissions_sweep(queued_after=timedelta(hours=1), running_after=timedelta(hours=1))
    assert sent == [(held.id, "code")]
    assert lanes.queue_name(lane="code") == f"{app.conf.task_default_queue}-code"
    route = app.amqp.router.route({}, "grader.sweep_submissions")
    assert route["queue"].name.endswith("-maintenance")
