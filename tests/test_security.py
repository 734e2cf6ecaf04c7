"""Who may see what: other students' work, unauthenticated requests, CSRF, escaping, hidden answers."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from assignments.models import Assignment
from grader.models import Result, Submission
from tests.clients import api, keys_anywhere, logged_in

SCRIPT = '<script>alert("owned")</script>'
SEEDS = ["accumulation", "dead-relu", "detach", "linear-layer", "multiple-paths", "negative-gradient", "non-scalar",
         "positive-gradient", "untracked-leaf", "visual-walkthrough"]





def graded_by_worker(person: Any, slug: str, answers: dict[str, str], timeout: float = 90) -> int:
    client = api(person)
    submission_id: int = client.post(f"/api/v1/assignments/{slug}/submissions/", {"answers": answers},
                                     format="json").json()["id"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.get(f"/api/v1/submissions/{submission_id}/").json()["status"] == "graded":
            return submission_id
        time.sleep(0.05)
    raise AssertionError(f"submission {submission_id} not graded")


def crafted_submission(person: Any, *, answer: str, message: str, status: str = "graded",
                       error_reason: str = "") -> Submission:
    """A stored submission whose texts are hostile, to check how pages print them."""
    assignment = Assignment.objects.get(slug="visual-walkthrough")
    submission = Submission.objects.create(student=person.user, assignment=assignment, answers={"x.grad": answer},
                                           status=status, attempt=1, error_reason=error_reason)
    if status == "graded":
        document = {"assignment": assignment.slug, "score": 0.0, "max_score": 2.0, "parts": [
            {"part": "x.grad", "correct": False, "score": 0.0, "max_score": 1.0, "answer": answer, "expected": 7.0,
             "diagnosis": {"kind": "unknown", "paths": [["x", "<b>mul</b>", "z"]], "message": message}}]}
        Result.objects.create(submission=submission, score=0.0, max_score=2.0, document=document)
    return submission


@pytest.mark.integration
def test_another_students_submission_is_404_on_every_page_the_graph_and_the_api(
    live_db: None, worker: Any, student: Any, other_student: Any, instructor: Any
) -> None:
    theirs = graded_by_worker(other_student, "visual-walkthrough", {"x.grad": "4"})
    urls = [f"/submissions/{theirs}/", f"/submissions/{theirs}/status/", f"/submissions/{theirs}/graph.svg",
            f"/submissions/{theirs}/graph.svg?part=x.grad"]
    for url in urls:
        assert logged_in(student).get(url).status_code == 404, url
        assert logged_in(other_student).get(url).status_code == 200, url
        assert logged_in(instructor).get(url).status_code == 200, url
    assert api(student).get(f"/api/v1/submissions/{theirs}/").status_code == 404
    assert api(student).get(f"/submissions/{theirs}/graph.svg").status_code == 404
    assert api(other_student).get(f"/api/v1/submissions/{theirs}/").status_code == 200
    assert api(instructor).get(f"/api/v1/submissions/{theirs}/").status_code == 200


@pytest.mark.django_db
def test_unauthenticated_api_requests_are_401(client: Client) -> None:
    for method, url in [("get", "/api/v1/assignments/"), ("get", "/api/v1/assignments/detach/"),
                        ("post", "/api/v1/assignments/detach/submissions/"), ("get", "/api/v1/submissions/1/"),
                        ("get", "/submissions/1/graph.svg")]:
        response = getattr(APIClient(), method)(url)
        assert response.status_code == 401, url
        assert response["WWW-Authenticate"] == "Token"
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert bad.get("/api/v1/assignments/").status_code == 401


@pytest.mark.django_db
def test_unauthenticated_pages_redirect_to_login(client: Client) -> None:
    for url in ["/", "/assignments/detach/", "/assignments/detach/submissions/", "/submissions/1/",
                "/submissions/1/status/"]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next="), url
    before = Submission.objects.count()
    assert client.post("/assignments/detach/", {"x.grad": "4"}).status_code == 302
    assert Submission.objects.count() == before


@pytest.mark.django_db
def test_forms_refuse_posts_without_a_csrf_token(student: Any) -> None:
    client = logged_in(student, enforce_csrf_checks=True)
    assert client.post("/assignments/detach/", {"x.grad": "4"}).status_code == 403
    assert client.post("/accounts/logout/").status_code == 403
    assert Client(enforce_csrf_checks=True).post(
        "/accounts/login/", {"username": student.user.username, "password": student.password}).status_code == 403
    assert not Submission.objects.filter(student=student.user).exists()

    page = client.get("/assignments/detach/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token
    response = client.post("/assignments/detach/", {"x.grad": "4", "csrfmiddlewaretoken": token.group(1)})
    assert response.status_code == 302
    assert Submission.objects.filter(student=student.user).count() == 1


@pytest.mark.django_db
def test_the_api_with_a_browser_session_still_needs_csrf(student: Any) -> None:
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(student.user)
    response = client.post("/api/v1/assignments/detach/submissions/", {"answers": {"x.grad": "4"}}, format="json")
    assert response.status_code == 403
    assert api(student).post("/api/v1/assignments/detach/submissions/", {"answers": {"x.grad": "4"}},
                             format="json").status_code == 202  # a token is no ambient credential


@pytest.mark.django_db
def test_logout_needs_a_post(student: Any) -> None:
    client = logged_in(student)
    assert client.get("/accounts/logout/").status_code == 405
    assert client.get("/").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("htmx", [False, True])
def test_a_script_typed_as_an_answer_comes_back_escaped(student: Any, htmx: bool) -> None:
    headers = {"HX-Request": "true"} if htmx else {}
    response = logged_in(student).post("/assignments/visual-walkthrough/", {"x.grad": SCRIPT, "y.grad": "2"},
                                       headers=headers)
    assert response.status_code == 400
    html = response.content.decode()
    assert "<script>alert" not in html
    assert 'value="&lt;script&gt;alert(&quot;owned&quot;)&lt;/script&gt;"' in html
    assert 'id="answer-x-grad-error"' in html


@pytest.mark.django_db
def test_stored_hostile_text_is_escaped_in_history_status_and_submission_pages(student: Any) -> None:
    message = '<img src=x onerror=alert(1)> [link](javascript:alert(2))'
    submission = crafted_submission(student, answer=SCRIPT, message=message)
    client = logged_in(student)
    for url in ["/assignments/visual-walkthrough/submissions/", f"/submissions/{submission.id}/",
                f"/submissions/{submission.id}/status/", "/assignments/visual-walkthrough/"]:
        html = client.get(url).content.decode()
        assert "<script>alert" not in html and "<img src=x" not in html and "<b>mul" not in html, url
        assert 'href="javascript:' not in html, url
        assert "&lt;script&gt;alert(&quot;owned&quot;)&lt;/script&gt;" in html, url


@pytest.mark.django_db
def test_markdown_statements_and_hints_cannot_carry_html(student: Any) -> None:
    assignment = Assignment.objects.get(slug="visual-walkthrough")
    assignment.statement = f"Intro {SCRIPT} [click](javascript:alert(1)) <iframe src=//evil></iframe> $a<b$"
    assignment.save()
    assignment.parts.filter(key="x.grad").update(hint='<img src=x onerror="alert(1)"> use $x$')
    html = logged_in(student).get("/assignments/visual-walkthrough/").content.decode()
    assert "<script>alert" not in html and "<iframe" not in html and "<img src=x" not in html
    assert 'href="javascript:' not in html
    assert "&lt;script&gt;" in html and "$a&lt;b$" in html


@pytest.mark.django_db
@pytest.mark.parametrize("slug", SEEDS)
def test_students_never_see_expected_values_or_the_reference_program(student: Any, slug: str) -> None:
    assignment = Assignment.objects.get(slug=slug)
    published = assignment.statement + "".join(p.config.get("starter", "") for p in assignment.parts.all())
    secret_lines = [line.strip() for line in assignment.reference_program.splitlines()
                    if len(line.strip()) > 12 and line.strip() not in published]
    if not secret_lines:  # accumulation, detach: the exercise shows the whole program on purpose
        pytest.skip("every line of this reference is published in the statement or starter code")
    page = logged_in(student).get(f"/assignments/{slug}/").content.decode()
    detail = api(student).get(f"/api/v1/assignments/{slug}/")
    for text in (page, detail.content.decode()):
        assert not [line for line in secret_lines if line in text]
    assert "Expected" not in page
    assert not {"expected", "reference_program", "params", "variant_ranges"} & keys_anywhere(detail.json())


@pytest.mark.django_db
def test_students_see_neither_expected_values_nor_infrastructure_reasons_instructors_do(
    student: Any, instructor: Any
) -> None:
    graded = crafted_submission(student, answer="4", message="missing a path")
    failed = crafted_submission(student, answer="5", message="", status="error",
                                error_reason="reference program failed: x = torch.tensor(x0, requires_grad=True)")
    student_api, instructor_api = api(student), api(instructor)
    mine = student_api.get(f"/api/v1/submissions/{graded.id}/").json()
    assert "expected" not in keys_anywhere(mine) and mine["result"]["parts"][0]["answer"] == "4"
    assert instructor_api.get(f"/api/v1/submissions/{graded.id}/").json()["result"]["parts"][0]["expected"] == 7.0
    error = student_api.get(f"/api/v1/submissions/{failed.id}/").json()["error"]
    assert "torch" not in error and "not counted" in error
    assert "torch.tensor" in instructor_api.get(f"/api/v1/submissions/{failed.id}/").json()["error"]
    for url in [f"/submissions/{graded.id}/status/", f"/submissions/{failed.id}/status/"]:
        html = logged_in(student).get(url).content.decode()
        assert "Expected" not in html and "torch.tensor" not in html
    assert "Expected (shown to instructors only)" in logged_in(instructor).get(
        f"/submissions/{graded.id}/status/").content.decode()


@pytest.mark.django_db
def test_responses_carry_safe_headers(student: Any) -> None:
    response = logged_in(student).get("/assignments/detach/")
    # SAMEORIGIN, not DENY: an LMS may frame the pages (CSP frame-ancestors, which browsers prefer)
    assert response["X-Content-Type-Options"] == "nosniff" and response["X-Frame-Options"] == "SAMEORIGIN"
