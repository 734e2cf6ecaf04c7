"""Policies set in the UI as students meet them: extensions, extra attempts, late credit, opens_at, hints."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from assignments.models import Assignment
from assignments.services import course_demo
from authoring import publishing
from grader.policy import PolicyError, window_at
from grader.workflow import submission_create
from tests.clients import api, logged_in

pytestmark = pytest.mark.django_db
REFERENCE = "x = torch.tensor(x0, requires_grad=True)\nz = 3 * x**2\nz.backward()\n"


def _assignment(**policy: Any) -> Assignment:
    slug = f"pol-{uuid.uuid4().hex[:6]}"
    data = {"slug": slug, "title": "Policy", "statement": "Secret statement $z = 3x^2$", "reference": REFERENCE,
            "params": {"x0": 1.5}, "policy": {"counts": "best", "late_penalty": [[0, 0.5]], **policy},
            "parts": [{"key": "x.grad", "hint": "Power rule, times three."}]}
    assignment = publishing.assignment_create(course=course_demo(), data=data)
    Assignment.objects.filter(pk=assignment.pk).update(published=True)
    assignment.refresh_from_db()
    return assignment


def test_an_extension_gives_extra_attempts_and_a_later_deadline(instructor: Any, student: Any,
                                                               other_student: Any) -> None:
    due = timezone.now() - timedelta(hours=2)
    assignment = _assignment(max_attempts=1, due_at=due)
    submission_create(student=student.user, assignment=assignment, answers={"x.grad": "1"}, code={})
    with pytest.raises(PolicyError, match="used your only attempt"):
        submission_create(student=student.user, assignment=assignment, answers={"x.grad": "2"}, code={})

    later = (timezone.now() + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    response = logged_in(instructor).post(f"/staff/assignments/{assignment.slug}/extensions/",
                                          {"username": student.user.username, "due_at": later, "extra": "1"})
    assert response.status_code == 302
    submission_create(student=student.user, assignment=assignment, answers={"x.grad": "2"}, code={})
    with pytest.raises(PolicyError, match="used all 2 attempts"):
        submission_create(student=student.user, assignment=assignment, answers={"x.grad": "3"}, code={})

    # Two hours past the due date: late credit halves the other student's score, not the extended one's.
    assert window_at(assignment=assignment, student_id=other_student.user.pk).late_factor == 0.5
    assert window_at(assignment=assignment, student_id=student.user.pk).late_factor == 1.0
    page = logged_in(student).get(f"/assignments/{assignment.slug}/").content.decode()
    assert "(your extension)" in page and "0 of 2" in page and "after the due date: score × 0.5" in page
    home = logged_in(student).get("/").content.decode()  # the home page said "0 of 1", ignoring the extension
    row = home[home.index(f"/assignments/{assignment.slug}/"):]
    assert "0 of 2" in row[:600] and "0 of 1" not in row[:600]


def test_only_students_of_the_course_get_extensions(instructor: Any, make_user: Any) -> None:
    assignment = _assignment()
    response = logged_in(instructor).post(f"/staff/assignments/{assignment.slug}/extensions/",
                                          {"username": "nobody-at-all", "extra": "1"}, follow=True)
    assert "is not a student of this course" in response.content.decode()


def test_before_opens_at_neither_statement_nor_parts_are_served(student: Any) -> None:
    assignment = _assignment(opens_at=timezone.now() + timedelta(days=2))
    page = logged_in(student).get(f"/assignments/{assignment.slug}/").content.decode()
    assert "not open yet" in page and "Secret statement" not in page and "x.grad" not in page
    body = api(student).get(f"/api/v1/assignments/{assignment.slug}/").json()
    assert body["statement"] == "" and body["parts"] == [] and body["opens_at"]
    with pytest.raises(PolicyError, match="opens at"):
        submission_create(student=student.user, assignment=assignment, answers={"x.grad": "9"}, code={})


def test_before_opens_at_a_submission_is_refused_before_its_answers_are_read(student: Any) -> None:
    """The refusal of a closed window must not tell what the answers' errors would: part keys, options,
    variables."""
    assignment = _assignment(opens_at=timezone.now() + timedelta(days=2))
    client = api(student)
    for answers in ({}, {"nope": "1"}, {"x.grad": "not a number"}, {"x.grad": "1", "y.grad": "2"}):
        response = client.post(f"/api/v1/assignments/{assignment.slug}/submissions/", {"answers": answers},
                               format="json")
        assert response.status_code == 403, (answers, response.content)
        assert "opens at" in response.json()["detail"] and "x.grad" not in response.content.decode()
    page = logged_in(student).post(f"/assignments/{assignment.slug}/", {"x.grad": "not a number"})
    assert page.status_code in (403, 404) and "x.grad" not in page.content.decode()
    with pytest.raises(PolicyError, match="opens at"):
        submission_create(student=student.user, assignment=assignment, answers={"y.grad": "?"}, code={})


def test_hints_appear_after_the_set_number_of_attempts(student: Any) -> None:
    assignment = _assignment(hints_after=1)
    client = api(student)
    assert client.get(f"/api/v1/assignments/{assignment.slug}/").json()["parts"][0]["hint"] == ""
    assert "Power rule" not in logged_in(student).get(f"/assignments/{assignment.slug}/").content.decode()
    submission_create(student=student.user, assignment=assignment, answers={"x.grad": "1"}, code={})
    assert client.get(f"/api/v1/assignments/{assignment.slug}/").json()["parts"][0]["hint"].startswith("Power")


def test_a_per_assignment_rate_limit_applies(student: Any) -> None:
    assignment = _assignment(rate_limit=1)
    submission_create(student=student.user, assignment=assignment, answers={"x.grad": "1"}, code={})
    with pytest.raises(PolicyError, match="at most 1 a minute"):
        submission_create(student=student.user, assignment=assignment, answers={"x.grad": "2"}, code={})


def test_an_assignment_without_a_limit_of_its_own_keeps_the_students_overall_limit(student: Any, settings: Any) -> None:
    """rate_limit = 0 lifts only the assignment's own limit: a student flooding it still meets GRADER_RATE_LIMIT."""
    settings.GRADER_RATE_LIMIT = 2
    assignment = _assignment(rate_limit=0)
    for answer in ("1", "2"):
        submission_create(student=student.user, assignment=assignment, answers={"x.grad": answer}, code={})
    with pytest.raises(PolicyError, match="at most 2 a minute"):
        submission_create(student=student.user, assignment=assignment, answers={"x.grad": "3"}, code={})


def test_an_extension_counts_when_submitting_through_the_api(instructor: Any, student: Any) -> None:
    """The API reads whether the student has an extension with the assignment: with one, its extra
    attempt is there; without one, the limit holds."""
    assignment = _assignment(max_attempts=1)
    client, url = api(student), f"/api/v1/assignments/{assignment.slug}/submissions/"
    assert client.post(url, {"answers": {"x.grad": "1"}}, format="json").status_code == 202
    refused = client.post(url, {"answers": {"x.grad": "2"}}, format="json")
    assert refused.status_code == 403 and "used your only attempt" in refused.json()["detail"]
    response = logged_in(instructor).post(f"/staff/assignments/{assignment.slug}/extensions/",
                                          {"username": student.user.username, "extra": "1"})
    assert response.status_code == 302
    assert client.post(url, {"answers": {"x.grad": "2"}}, format="json").status_code == 202
    again = client.post(url, {"answers": {"x.grad": "3"}}, format="json")
    assert again.status_code == 403 and "used all 2 attempts" in again.json()["detail"]
