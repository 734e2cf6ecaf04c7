"""The reveal policy: a student sees the expected answers (result, answer key, picture) exactly when
the assignment's `reveal` says — by their own due date, closing date and attempts — never before."""

from __future__ import annotations

import re
import uuid
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from assignments.models import Assignment, Extension
from assignments.services import course_demo
from authoring import publishing
from grader.models import Submission
from grader.workflow import submission_create, submission_grade
from tests.clients import api, keys_anywhere, logged_in

REFERENCE = "x = torch.tensor(x0, requires_grad=True)\nz = 3 * x**2\nz.backward()\n"  # x.grad = 6x = 9 at 1.5
SVG = "{http://www.w3.org/2000/svg}"


def _assignment(**policy: Any) -> Assignment:
    data = {"slug": f"reveal-{uuid.uuid4().hex[:6]}", "title": "Reveal", "statement": "Find x.grad.",
            "reference": REFERENCE, "params": {"x0": 1.5}, "policy": {"counts": "best", "late_penalty": [], **policy},
            "parts": [{"key": "x.grad"}]}
    assignment = publishing.assignment_create(course=course_demo(), data=data)
    Assignment.objects.filter(pk=assignment.pk).update(published=True)
    assignment.refresh_from_db()
    return assignment


def _graded_wrong(person: Any, assignment: Assignment) -> Submission:
    """x.grad = 3: the power rule's factor 2x dropped. Graded in-process by the worker's service."""
    submission = submission_create(student=person.user, assignment=assignment, answers={"x.grad": "3"}, code={})
    submission_grade(submission_id=submission.id)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.GRADED
    return submission


def _at(monkeypatch: pytest.MonkeyPatch, when: datetime) -> None:
    monkeypatch.setattr("infra.clock.now", lambda: when)


def _texts(svg: bytes) -> list[str]:
    return ["".join(element.itertext()).strip() for element in ET.fromstring(svg).iter(f"{SVG}text")]


def _seen(person: Any, assignment: Assignment, submission: Submission) -> dict[str, Any]:
    """Everything a student reads about the expected answer: pages, API, pictures."""
    client, token = logged_in(person), api(person)
    return {
        "result_page": client.get(f"/submissions/{submission.id}/").content.decode(),
        "assignment_page": client.get(f"/assignments/{assignment.slug}/").content.decode(),
        "api_submission": token.get(f"/api/v1/submissions/{submission.id}/").json(),
        "api_history": token.get(f"/api/v1/assignments/{assignment.slug}/submissions/").json(),
        "api_assignment": token.get(f"/api/v1/assignments/{assignment.slug}/").json(),
        "picture": _texts(client.get(f"/submissions/{submission.id}/graph.svg?part=x.grad").content),
        "answers_svg": client.get(f"/assignments/{assignment.slug}/answers.svg"),
    }


def _assert_hidden(seen: dict[str, Any]) -> None:
    # 9.0 on its own, not the "…:59.03…" of a timestamp on the page
    assert "Expected" not in seen["result_page"] and not re.search(r"(?<![\d.])9\.0(?!\d)", seen["result_page"])
    assert "answer-key" not in seen["assignment_page"]
    assert "expected" not in keys_anywhere(seen["api_submission"]["result"])
    assert "expected" not in keys_anywhere(seen["api_history"])
    assert seen["api_assignment"]["answers_revealed"] is False and seen["api_assignment"]["expected_answers"] is None
    assert not [text for text in seen["picture"] if text.startswith("x.grad") or "9" in text], seen["picture"]
    assert seen["answers_svg"].status_code == 404


def _assert_shown(seen: dict[str, Any]) -> None:
    assert "Expected answer: <code>9.0</code>" in seen["result_page"]
    assert re.search(r'<code class="expected-answer">9\.0</code>', seen["assignment_page"])
    assert [part["expected"] for part in seen["api_submission"]["result"]["parts"]] == [9.0]
    assert seen["api_history"][0]["result"]["parts"][0]["expected"] == 9.0
    assert seen["api_assignment"]["answers_revealed"] is True
    assert seen["api_assignment"]["expected_answers"] == {"x.grad": 9.0}
    assert seen["api_assignment"]["answers_graph_svg_url"].endswith(f"/assignments/{seen['slug']}/answers.svg")
    assert "x.grad = 9" in seen["picture"], seen["picture"]  # the wrong part's picture now shows the flow
    assert seen["answers_svg"].status_code == 200 and "x.grad = 9" in _texts(seen["answers_svg"].content)


@pytest.mark.django_db
def test_after_due_reveals_at_each_students_own_due_date(monkeypatch: pytest.MonkeyPatch, student: Any,
                                                         other_student: Any) -> None:
    now = timezone.now()
    assignment = _assignment(due_at=now + timedelta(hours=1), reveal="after_due")
    mine, theirs = _graded_wrong(student, assignment), _graded_wrong(other_student, assignment)
    Extension.objects.create(assignment=assignment, student=other_student.user, due_at=now + timedelta(days=2))
    _assert_hidden(_seen(student, assignment, mine))
    page = _seen(student, assignment, mine)["assignment_page"]
    assert "what went wrong and a picture of it; after your due date: everything, the expected answers too" in page

    _at(monkeypatch, now + timedelta(hours=2))  # past the due date, before the extension's
    _assert_shown({**_seen(student, assignment, mine), "slug": assignment.slug})
    _assert_hidden(_seen(other_student, assignment, theirs))
    assert api(other_student).get(f"/api/v1/submissions/{mine.id}/").status_code == 404  # still not theirs

    _at(monkeypatch, now + timedelta(days=3))
    _assert_shown({**_seen(other_student, assignment, theirs), "slug": assignment.slug})


@pytest.mark.django_db
def test_after_attempts_reveals_once_the_last_attempt_is_used(student: Any) -> None:
    assignment = _assignment(max_attempts=2, reveal="after_attempts")
    first = _graded_wrong(student, assignment)
    _assert_hidden(_seen(student, assignment, first))
    _graded_wrong(student, assignment)
    _assert_shown({**_seen(student, assignment, first), "slug": assignment.slug})


@pytest.mark.django_db
def test_after_close_waits_for_the_closing_date_not_the_due_date(monkeypatch: pytest.MonkeyPatch,
                                                                 student: Any) -> None:
    now = timezone.now()
    assignment = _assignment(due_at=now + timedelta(hours=1), closes_at=now + timedelta(days=1),
                             reveal="after_close")
    submission = _graded_wrong(student, assignment)
    _at(monkeypatch, now + timedelta(hours=2))
    _assert_hidden(_seen(student, assignment, submission))
    _at(monkeypatch, now + timedelta(days=2))
    _assert_shown({**_seen(student, assignment, submission), "slug": assignment.slug})


@pytest.mark.django_db
def test_never_reveals_even_after_everything_closed(monkeypatch: pytest.MonkeyPatch, student: Any) -> None:
    now = timezone.now()
    assignment = _assignment(due_at=now + timedelta(hours=1), closes_at=now + timedelta(hours=2), max_attempts=1)
    submission = _graded_wrong(student, assignment)
    _at(monkeypatch, now + timedelta(days=30))
    _assert_hidden(_seen(student, assignment, submission))


@pytest.mark.django_db
@pytest.mark.parametrize(("policy", "problem"), [
    ({"reveal": "after_due", "due_at": "due"}, "while late submissions are still accepted"),
    ({"reveal": "after_due", "due_at": "due", "closes_at": "later"}, "while late submissions are still accepted"),
    ({"reveal": "after_due"}, "without a due date never shows"),
    ({"reveal": "after_close"}, "without a closing date never shows"),
    ({"reveal": "after_attempts"}, "with unlimited attempts never shows"),
    ({"reveal": "after_due", "due_at": "due", "closes_at": "due"}, None),
    ({"reveal": "after_attempts", "max_attempts": 3}, None),
    ({"reveal": "never"}, None),
    ({"reveal": "after_due", "due_at": "due", "release_after": "picture"}, None),  # the reveal gives nothing away
])
def test_vetting_names_a_reveal_that_leaks_to_late_submitters_or_never_happens(policy: dict[str, Any],
                                                                             problem: str | None) -> None:
    from authoring.policy_vetting import policy_reasons

    due = timezone.now()
    dates = {"due": due, "later": due + timedelta(days=1)}
    assignment = Assignment(**{k: dates.get(v, v) if isinstance(v, str) and k != "reveal" else v
                               for k, v in policy.items()})
    reasons = policy_reasons(assignment=assignment)
    assert [problem in r.problem for r in reasons] == ([True] if problem else [])
    assert all(r.code == "reveal-policy:policy.reveal" for r in reasons)


@pytest.mark.parametrize(("before", "refused"), [("picture", False), ("full_picture", True), ("answer_key", True)])
def test_vetting_names_a_level_that_gives_the_answers_away_from_the_first_attempt(before: str, refused: bool) -> None:
    from authoring.policy_vetting import policy_reasons

    reasons = policy_reasons(assignment=Assignment(reveal="never", release_before=before))
    assert [r.field for r in reasons] == (["policy.release_before"] if refused else [])


@pytest.mark.integration
def test_a_student_who_never_submitted_gets_their_own_answers_computed_by_a_worker(live_db: None, worker: Any,
                                                                                  student: Any) -> None:
    import time

    from grading.variants import params_for_student

    past = timezone.now() - timedelta(hours=1)
    assignment = _assignment(due_at=past, closes_at=past, reveal="after_due")
    Assignment.objects.filter(pk=assignment.pk).update(variant_ranges={"x0": {"min": 1, "max": 4, "step": 0.5}})
    assignment.refresh_from_db()
    x0 = params_for_student(assignment=assignment, student_id=student.user.pk)["x0"]
    client = logged_in(student)
    assert "your values are being run now" in client.get(f"/assignments/{assignment.slug}/").content.decode()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answers = api(student).get(f"/api/v1/assignments/{assignment.slug}/").json()["expected_answers"]
        if answers is not None:
            break
        time.sleep(0.2)
    assert answers == {"x.grad": pytest.approx(6 * x0)}  # d(3x²)/dx at this student's own x0
    assert f"x0 = {x0}" in client.get(f"/assignments/{assignment.slug}/").content.decode()
