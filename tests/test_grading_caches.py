"""What the numeric path remembers per process never changes a grade (parsed analyses, variant ids),
and the work it skips is work that had nothing to do (the LMS score hook for non-LMS students)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.db import transaction
from lti_tool.models import LtiRegistration, LtiUser

from assignments.models import Assignment, Variant
from assignments.services import course_demo
from catalog.spec import spec_from_data
from catalog.upsert import assignment_upsert
from conftest import Person
from grader import workflow
from grader.models import Submission
from grading import variants
from grading.answer_grading import answers_grade
from lti import scores
from tests.seed_answers import FORMULAS, NUMERIC

WRONG = {"visual-walkthrough": {"x.grad": "4", "y.grad": "7", "dz_dx": "2x"}, "detach": {"x.grad": "12"},
         "negative-gradient": {"x.grad": "16", "dz_dx": "4 + 3x^2"}, "non-scalar": {"x.grad": "12"},
         "accumulation": {"x.grad": "4"}, "untracked-leaf": {"x.grad": "0"}, "dead-relu": {"x.grad": "1"}}


def _documents(slug: str) -> list[str]:
    assignment = Assignment.objects.prefetch_related("parts").get(slug=slug)
    variant = variants.variant_get(assignment=assignment, params=assignment.params)
    keys = {p.key for p in assignment.parts.all()}
    answer_sets = [NUMERIC.get(slug, {}), FORMULAS.get(slug, {}), WRONG.get(slug, {})]
    return [json.dumps(answers_grade(assignment=assignment, variant=variant, code={}, expected_shown=True,
                                     answers={k: v for k, v in answers.items() if k in keys}).document,
                       sort_keys=True) for answers in answer_sets]


@pytest.mark.django_db
@pytest.mark.parametrize("slug", sorted(NUMERIC))
def test_grading_from_the_process_cache_gives_the_document_a_fresh_parse_gives(slug: str) -> None:
    variants._ANALYSES.clear()
    variants._POINTS.clear()
    fresh = _documents(slug)
    assert len(variants._ANALYSES) == 1  # parsed once, then served from memory
    assert _documents(slug) == fresh and _documents(slug) == fresh  # the engine's lazy indexes do not leak


@pytest.mark.django_db
def test_a_row_made_again_after_a_rolled_back_preview_is_not_served_the_old_analysis(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite gives a row inserted after a rollback the rolled-back row's id: same id, same hash."""
    assignment = Assignment.objects.prefetch_related("parts").get(slug="positive-gradient")
    at_two = variants.variant_get(assignment=assignment, params=assignment.params).analysis_data()
    at_five = variants.variant_get(assignment=assignment, params={**assignment.params, "x0": 5.0}).analysis_data()
    replies = iter([at_two, at_five])

    class Runner:
        def analyze(self, **job: Any) -> dict[str, Any]:
            return next(replies)

    monkeypatch.setattr(variants, "get_runner", Runner)
    params = {**assignment.params, "x0": 9.0}
    with pytest.raises(RuntimeError), transaction.atomic():
        first = variants.variant_get(assignment=assignment, params=params)
        assert variants.variant_analysis(variant=first).parts["x.grad"].value == [7.0]
        raise RuntimeError("roll back, as a preview does")
    again = variants.variant_get(assignment=assignment, params=params)
    assert variants.variant_analysis(variant=again).parts["x.grad"].value == [13.0]  # what the row holds now


@pytest.mark.django_db
def test_a_submission_graded_twice_reads_its_analysis_from_the_database_once(
        student: Person, monkeypatch: pytest.MonkeyPatch, django_assert_max_num_queries: Any) -> None:
    monkeypatch.setattr("grader.workflow.queueing.enqueue_once", lambda *args, **kwargs: True)
    assignment = Assignment.objects.get(slug="visual-walkthrough")
    first = workflow.submission_create(student=student.user, assignment=assignment, answers={"x.grad": "4"}, code={})
    workflow.submission_grade(submission_id=first.id)
    second = workflow.submission_create(student=student.user, assignment=assignment, answers={"x.grad": "7"},
                                        code={})
    with django_assert_max_num_queries(8):  # claim, row, parts, extension, a transaction (savepoint) of 2 writes
        workflow.submission_grade(submission_id=second.id)
    second.refresh_from_db()
    assert second.status == "graded" and second.result.score == 1.0
    assert "missing_path" in json.dumps(Submission.objects.get(id=first.id).result.document)


def test_a_remembered_variant_id_is_always_one_that_was_committed(live_db: None) -> None:
    data = {"slug": f"ids-{uuid.uuid4().hex[:8]}", "title": "T", "statement": "s", "params": {"x0": 2.0},
            "reference": "x = torch.tensor(x0, requires_grad=True)\nz = x**2\nz.backward()\n",
            "parts": [{"key": "x.grad"}]}
    assignment, _ = assignment_upsert(spec=spec_from_data(data, path="ids.toml"), course=course_demo())
    with pytest.raises(RuntimeError), transaction.atomic():
        variants.variant_id_for(assignment=assignment, params={"x0": 3.0})
        raise RuntimeError("roll back")
    kept = variants.variant_id_for(assignment=assignment, params={"x0": 3.0})
    assert Variant.objects.filter(id=kept, assignment=assignment).exists()
    assert variants.variant_id_for(assignment=assignment, params={"x0": 3.0}) == kept
    assignment.delete()  # nobody submitted: deleted with its variants; the same file loaded again
    again, _ = assignment_upsert(spec=spec_from_data(data, path="ids.toml"), course=course_demo())
    fresh = variants.variant_id_for(assignment=again, params={"x0": 3.0})
    assert Variant.objects.filter(id=fresh, assignment=again).exists()
    again.delete()


@pytest.mark.django_db
def test_the_score_hook_does_its_work_only_for_students_who_came_from_an_lms(
        student: Person, other_student: Person, monkeypatch: pytest.MonkeyPatch,
        django_capture_on_commit_callbacks: Any) -> None:
    monkeypatch.setattr("grader.workflow.queueing.enqueue_once", lambda *args, **kwargs: True)
    updated: list[int] = []
    monkeypatch.setattr(scores, "score_deliveries_update", lambda submission_id: updated.append(submission_id) or [])
    registration = LtiRegistration.objects.create(name="lms", issuer="https://lms.example", client_id="c",
                                                  auth_url="https://lms.example/a", token_url="https://lms.example/t",
                                                  keyset_url="https://lms.example/k")
    LtiUser.objects.create(registration=registration, sub="s-1", auth_user=student.user)
    assignment = Assignment.objects.get(slug="visual-walkthrough")
    graded = {}
    for person in (student, other_student):
        submission = workflow.submission_create(student=person.user, assignment=assignment,
                                                answers={"x.grad": "7"}, code={})
        with django_capture_on_commit_callbacks(execute=True):
            workflow.submission_grade(submission_id=submission.id)
        graded[person.user.pk] = submission.id
    assert updated == [graded[student.user.pk]]  # the other student never reached the LMS code
