"""Retrying a submission safely: the API's Idempotency-Key makes a second POST (after a timeout, a
503 while the database restarts, a dropped connection) return the first submission, never a new one."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from assignments.models import Assignment
from grader.models import Submission
from grader.workflow import attempts_used
from tests.clients import api
from tests.drills import at_once

SUBMIT = "/api/v1/assignments/detach/submissions/"
BODY = {"answers": {"x.grad": "12"}}  # the detach ignored (the right answer is 4)


def post(person: Any, body: dict[str, Any], key: str | None, slug: str = "detach") -> Any:
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return api(person).post(f"/api/v1/assignments/{slug}/submissions/", body, format="json", **headers)


@pytest.mark.django_db
def test_a_retry_with_the_same_key_gets_the_first_submission_and_uses_no_attempt(student: Any) -> None:
    first = post(student, BODY, "retry-1")
    again = post(student, BODY, "retry-1")
    assert first.status_code == again.status_code == 202
    assert again.json()["id"] == first.json()["id"] and again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["Location"].endswith(f"/api/v1/submissions/{first.json()['id']}/")
    assert Submission.objects.filter(student=student.user).count() == 1
    assert attempts_used(student=student.user, assignment=Assignment.objects.get(slug="detach")) == 1


@pytest.mark.django_db
def test_without_a_key_two_posts_are_two_submissions(student: Any) -> None:
    assert post(student, BODY, None).json()["id"] != post(student, BODY, None).json()["id"]


@pytest.mark.django_db
def test_the_same_key_for_different_answers_is_409_and_stores_nothing(student: Any) -> None:
    post(student, BODY, "k")
    response = post(student, {"answers": {"x.grad": "4"}}, "k")
    assert response.status_code == 409 and "different submission" in response.json()["detail"]
    other_assignment = post(student, {"answers": {"x.grad": "7"}}, "k", slug="positive-gradient")
    assert other_assignment.status_code == 409
    assert Submission.objects.filter(student=student.user).count() == 1


@pytest.mark.django_db
def test_a_retry_after_the_deadline_still_gets_the_submission_made_in_time(student: Any) -> None:
    first = post(student, BODY, "before-close").json()["id"]
    Assignment.objects.filter(slug="detach").update(closes_at="2000-01-01T00:00:00Z", max_attempts=1)
    again = post(student, BODY, "before-close")
    assert again.status_code == 202 and again.json()["id"] == first
    assert post(student, BODY, "after-close").status_code == 403  # a new submission is refused


@pytest.mark.django_db
def test_a_retry_of_a_graded_submission_returns_it_graded(student: Any) -> None:
    from grader.workflow import submission_grade

    first = post(student, BODY, "graded-1").json()["id"]
    submission_grade(submission_id=first)
    again = post(student, BODY, "graded-1")
    assert again.status_code == 200 and again.json()["status"] == "graded"
    assert again.json()["result"]["parts"][0]["correct"] is False


@pytest.mark.django_db
def test_keys_are_per_student(student: Any, other_student: Any) -> None:
    mine, theirs = post(student, BODY, "shared-name"), post(other_student, BODY, "shared-name")
    assert mine.status_code == theirs.status_code == 202 and mine.json()["id"] != theirs.json()["id"]


@pytest.mark.django_db
@pytest.mark.parametrize("key", ["", "x" * 65, "spaces are not allowed", "ключ", "a/b"])
def test_a_malformed_key_is_400_and_stores_nothing(student: Any, key: str) -> None:
    response = post(student, BODY, key)
    assert response.status_code == 400 and "Idempotency-Key" in response.json()["errors"]
    assert not Submission.objects.filter(student=student.user).exists()


@pytest.mark.integration
def test_concurrent_retries_make_one_submission(live_db: None, student: Any) -> None:
    statuses: list[int] = []
    ids: list[int] = []
    lock = threading.Lock()

    def retry() -> None:
        response = post(student, BODY, "concurrent")
        with lock:
            statuses.append(response.status_code)
            ids.append(response.json()["id"])

    at_once(retry, 6)
    # 202 while it is queued; a retry that comes after a worker graded it gets it graded (200)
    assert len(statuses) == 6 and set(statuses) <= {200, 202} and len(set(ids)) == 1
    assert Submission.objects.filter(student=student.user, idempotency_key="concurrent").count() == 1
