"""Grading services in-process (the worker's code path without the broker)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from assignments.models import Assignment
from conftest import Person
from grader import workflow
from grader.models import Result, Submission
from grader.workflow import claim, grade
from infra import clock
from tests.clients import api

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_broker(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    enqueued: list[int] = []
    for stage in ("submit", "sweep"):
        monkeypatch.setattr(f"grader.workflow.{stage}.submission_enqueue",
                            lambda submission_id, lane: enqueued.append(submission_id))
    monkeypatch.setattr("grader.workflow.grade.drain_wake", lambda: enqueued.append(0))  # a drain asked for
    return enqueued


def create(person: Person, **answers: str) -> Submission:
    assignment = Assignment.objects.get(slug="visual-walkthrough")
    return workflow.submission_create(student=person.user, assignment=assignment, answers=answers, code={})


def test_grading_twice_grades_once(
    student: Person, no_broker: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        submission = create(student, **{"x.grad": "7"})
    assert no_broker == [submission.id]  # enqueued only once the row is committed
    workflow.submission_grade(submission_id=submission.id)
    first = Result.objects.get(submission=submission)
    workflow.submission_grade(submission_id=submission.id)
    assert Result.objects.filter(submission=submission).count() == 1
    assert Result.objects.get(submission=submission).created_at == first.created_at
    submission.refresh_from_db()
    assert submission.status == "graded" and first.score == 1.0


def test_a_bug_while_grading_is_an_error_that_costs_no_attempt(student: Person, monkeypatch: Any) -> None:
    submission = create(student, **{"x.grad": "7"})

    def broken(**kwargs: Any) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(grade, "answers_grade", broken)
    workflow.submission_grade(submission_id=submission.id)
    submission.refresh_from_db()
    assert submission.status == "error" and submission.attempt is None
    assert "internal grading error" in submission.error_reason
    assert workflow.attempts_used(student=student.user, assignment=submission.assignment) == 0


def test_the_sweeper_gives_up_on_a_row_that_keeps_killing_its_worker(student: Person, no_broker: list[int]) -> None:
    poisoned = create(student, **{"x.grad": "7"})
    create(student, **{"x.grad": "4"})  # a neighbour that only waits
    for _ in range(grade.MAX_DELIVERIES):  # claimed, then the worker dies, then swept back
        assert claim.submission_claim(submission_id=poisoned.id) is not None
        workflow.submissions_sweep(queued_after=timedelta(hours=1), running_after=timedelta(0))
    poisoned.refresh_from_db()
    assert poisoned.status == "error" and poisoned.attempt is None
    assert "5 times" in poisoned.error_reason


def test_a_row_that_only_waits_is_never_given_up(student: Person, no_broker: list[int]) -> None:
    waiting = create(student, **{"x.grad": "4"})
    for _ in range(grade.MAX_DELIVERIES + 2):  # workers down: swept again and again
        assert waiting.id in workflow.submissions_sweep(queued_after=timedelta(0), running_after=timedelta(0))
    waiting.refresh_from_db()
    assert waiting.status == "queued" and waiting.deliveries == 0


def test_a_running_row_of_a_dead_worker_is_queued_again(student: Person, no_broker: list[int]) -> None:
    submission = create(student, **{"x.grad": "7"})
    assert claim.submission_claim(submission_id=submission.id) is not None
    no_broker.clear()
    assert workflow.submissions_sweep(queued_after=timedelta(hours=1), running_after=timedelta(0)) == [submission.id]
    assert no_broker == [submission.id]
    submission.refresh_from_db()
    assert submission.status == "queued" and submission.claim is None and submission.deliveries == 1


def test_a_changed_reference_grades_with_the_new_program_and_keeps_caches_apart(student: Person) -> None:
    from assignments.services import course_demo
    from catalog.spec import spec_from_data
    from catalog.upsert import assignment_upsert

    def upsert(program: str) -> Assignment:
        data = {"slug": "changing", "title": "T", "statement": "s", "params": {"x0": 2.0},
                "reference": f"x = torch.tensor(x0, requires_grad=True)\nz = {program}\nz.backward()\n",
                "parts": [{"key": "x.grad"}]}
        return assignment_upsert(spec=spec_from_data(data, path="changing.toml"), course=course_demo())[0]

    assignment = upsert("x**2")
    submission = workflow.submission_create(student=student.user, assignment=assignment,
                                            answers={"x.grad": "12"}, code={})
    old_variant = submission.variant
    assignment = upsert("x**3")  # the instructor fixes the reference while it waits
    workflow.submission_grade(submission_id=submission.id)
    submission.refresh_from_db()
    assert submission.result.score == 1.0  # d(x³)/dx at 2 is 12
    old_variant.refresh_from_db()
    assert old_variant.analysis is None  # never filled with the other program's analysis
    assert submission.variant_id != old_variant.id  # the picture is drawn from the variant graded with


def test_a_student_submitting_too_fast_is_told_to_wait(student: Person, settings: Any) -> None:
    from grader.policy import RateLimited

    settings.GRADER_RATE_LIMIT = 3
    for _ in range(3):
        create(student, **{"x.grad": "7"})
    with pytest.raises(RateLimited, match="at most 3 a minute"):
        create(student, **{"x.grad": "7"})
    response = api(student).post("/api/v1/assignments/visual-walkthrough/submissions/", {"answers": {"x.grad": "7"}},
                           format="json")
    assert response.status_code == 429 and response["Retry-After"] == "60"
    assert Submission.objects.filter(student=student.user).count() == 3


@pytest.mark.parametrize(("counts", "shown"), [("best", 2.0), ("last", 0.0)])
def test_the_score_that_counts_follows_the_policy(student: Person, counts: str, shown: float) -> None:
    from grader.selectors import assignment_row

    Assignment.objects.filter(slug="visual-walkthrough").update(counts=counts)
    for answers in ({"x.grad": "7", "y.grad": "2"}, {"x.grad": "1", "y.grad": "1"}):
        workflow.submission_grade(submission_id=create(student, **answers).id)
    row = assignment_row(user=student.user, slug="visual-walkthrough")
    assert row is not None and row.best_score == shown


def test_a_student_sees_and_is_graded_at_their_own_drawn_values(student: Person) -> None:
    from assignments.services import course_demo
    from catalog.spec import spec_from_data
    from catalog.upsert import assignment_upsert

    data = {"slug": "drawn", "title": "T", "statement": "Take $x = 2$.", "params": {"x0": 2},
            "variants": {"x0": {"min": 10, "max": 90}},
            "reference": "x = torch.tensor(float(x0), requires_grad=True)\nz = x**2\nz.backward()\n",
            "parts": [{"key": "x.grad"}]}
    assignment_upsert(spec=spec_from_data(data, path="drawn.toml"), course=course_demo())
    drawn = api(student).get("/api/v1/assignments/drawn/").json()["your_values"]["x0"]
    assert isinstance(drawn, int) and 10 <= drawn <= 90
    submission = create_for(student, "drawn", {"x.grad": str(2 * drawn)})
    workflow.submission_grade(submission_id=submission.id)
    submission.refresh_from_db()
    assert submission.result.score == 1.0


def create_for(person: Person, slug: str, answers: dict[str, str]) -> Submission:
    assignment = Assignment.objects.get(slug=slug)
    return workflow.submission_create(student=person.user, assignment=assignment, answers=answers, code={})


def test_drawn_values_keep_the_type_and_shape_of_the_defaults() -> None:
    import random

    from grading.variants import _draw

    rng = random.Random(1)
    assert isinstance(_draw(rng, {"min": 1, "max": 4}, 2.0), float)
    assert isinstance(_draw(rng, {"min": 1, "max": 4}, 2), int)
    drawn = _draw(rng, {"min": 1, "max": 4}, [1.0, 2.0, 3.0])
    assert isinstance(drawn, list) and len(drawn) == 3 and all(1 <= v <= 4 for v in drawn)
    assert 0 <= _draw(rng, {"min": 0, "max": 1, "step": 1e-300}, 0.5) <= 1  # a tiny step stays bounded


def _right(submission: Submission) -> bool:
    submission.refresh_from_db()
    [part] = [p for p in submission.result.document["parts"] if p["part"] == "x.grad"]
    return bool(part["correct"])


def test_a_drain_grades_every_queued_numeric_row_once_in_batches(student: Person, no_broker: list[int]) -> None:
    answers = ["7", "4", "7", "1", "7", "2", "7", "3", "7", "5"]  # right (7) and wrong x.grad in turn
    rows = [create(student, **{"x.grad": value}) for value in answers]
    no_broker.clear()
    assert workflow.numeric_drain() == len(rows)
    assert no_broker == [0]  # a full batch: a second drain invited, for another worker process to join
    assert [_right(row) for row in rows] == [value == "7" for value in answers]
    assert {row.status for row in rows} == {"graded"} and Result.objects.filter(submission__in=rows).count() == 10
    claims = Submission.objects.filter(id__in=[row.id for row in rows]).values_list("claim", flat=True)
    assert len(set(claims)) == 2  # claimed 8 and 2 at a time, each batch stored in one transaction
    assert workflow.numeric_drain() == 0  # nothing left: a second drain grades nothing again


def test_a_row_waiting_out_a_sandbox_restart_is_not_drained_before_it_is_due(student: Person) -> None:
    later, due = create(student, **{"x.grad": "7"}), create(student, **{"x.grad": "4"})
    Submission.objects.filter(id=later.id).update(enqueued_at=clock.now() + timedelta(seconds=10))
    assert workflow.numeric_drain() == 1
    later.refresh_from_db()
    due.refresh_from_db()
    assert later.status == "queued" and later.deliveries == 0 and due.status == "graded"


def test_a_drain_out_of_time_hands_the_rest_to_the_next_drain(
    student: Person, no_broker: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grade, "DRAIN_SECONDS", -1.0)  # past its time after the first batch
    rows = [create(student, **{"x.grad": "7"}) for _ in range(claim.DRAIN_BATCH + 2)]
    no_broker.clear()
    assert workflow.numeric_drain() == claim.DRAIN_BATCH
    assert no_broker == [0, 0]  # another drain invited to the backlog, then the next one asked for on leaving
    assert [row.status for row in Submission.objects.filter(id__in=[r.id for r in rows[-3:]]).order_by("id")] == [
        "graded", "queued", "queued"]


def test_a_numeric_row_that_meets_a_sandbox_restart_waits_and_costs_nothing(
    student: Person, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grading.reference import SandboxUnavailable
    from sandbox.client import SandboxError

    retried: list[tuple[Any, ...]] = []
    monkeypatch.setattr(grade, "enqueue", lambda *args, **kwargs: retried.append(kwargs["countdown"]))

    def restarting(**kwargs: Any) -> None:
        raise SandboxUnavailable(SandboxError("restarting"))

    monkeypatch.setattr(grade, "answers_grade", restarting)
    submission = create(student, **{"x.grad": "7"})
    assert workflow.numeric_drain() == 1
    submission.refresh_from_db()
    assert submission.status == "queued" and submission.attempt == 1 and retried == [5.0]
    assert submission.enqueued_at is not None and submission.enqueued_at > clock.now()
    assert workflow.numeric_drain() == 0  # not due yet: its own delayed task grades it then


def test_rows_behind_a_slow_one_are_given_back_not_held(student: Person, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grade, "DRAIN_SLOW_S", -1.0)  # every row counts as slow: the rest go back each time
    rows = [create(student, **{"x.grad": value}) for value in ("7", "4", "7")]
    assert workflow.numeric_drain() == 3
    graded = Submission.objects.filter(id__in=[row.id for row in rows])
    assert {row.status for row in graded} == {"graded"}
    assert {row.deliveries for row in graded} == {1}  # given back, not counted towards giving up on it
    assert len({row.claim for row in graded}) == 3  # each stored as soon as it was graded


def test_a_database_failure_mid_batch_hands_the_rows_back(student: Person, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import DatabaseError

    rows = [create(student, **{"x.grad": "7"}) for _ in range(3)]

    def gone(**kwargs: Any) -> None:
        raise DatabaseError("server closed the connection unexpectedly")

    monkeypatch.setattr(grade, "results_store", gone)
    with pytest.raises(DatabaseError):  # the task retries it (grader/tasks.py)
        workflow.numeric_drain()
    again = Submission.objects.filter(id__in=[row.id for row in rows])
    assert {(row.status, row.claim, row.deliveries) for row in again} == {("queued", None, 1)}  # not after 150 s


def test_a_row_stamped_by_a_clock_slightly_ahead_is_due(student: Person) -> None:
    ahead = create(student, **{"x.grad": "7"})
    Submission.objects.filter(id=ahead.id).update(enqueued_at=clock.now() + timedelta(seconds=0.5))
    assert workflow.numeric_drain() == 1
