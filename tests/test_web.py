"""The student pages: log in, my assignments, the answer form, live status, feedback, history."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from django.test import Client

from assignments.models import Assignment
from grader.models import Submission
from grader.workflow import attempts_used
from tests.clients import logged_in
from tests.seed_answers import answers_for, code_for


def wait_status(client: Client, submission_id: int, timeout: float = 90) -> str:
    """Polls the status fragment as the page does; returns its HTML once graded."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        html = client.get(f"/submissions/{submission_id}/status/").content.decode()
        if 'data-status="graded"' in html or 'data-status="error"' in html:
            return html
        assert "hx-get" in html  # still polling
        time.sleep(0.05)
    raise AssertionError(f"submission {submission_id} not graded within {timeout}s")


def post_answers(client: Client, slug: str, answers: dict[str, str], **headers: str) -> Any:
    return client.post(f"/assignments/{slug}/", answers, headers=headers)


@pytest.mark.django_db
def test_login_with_a_password_lands_on_my_assignments(student: Any) -> None:
    client = Client()
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and b'<label for="id_username">' in page.content
    response = client.post("/accounts/login/", {"username": student.user.username, "password": student.password})
    assert response.status_code == 302 and response["Location"] == "/"
    home = client.get("/")
    assert b"My courses and assignments" in home.content
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/").status_code == 302


@pytest.mark.django_db
def test_a_wrong_password_is_refused_with_a_message(student: Any) -> None:
    response = Client().post("/accounts/login/", {"username": student.user.username, "password": "wrong"})
    assert response.status_code == 200 and b'role="alert"' in response.content


@pytest.mark.django_db
def test_home_lists_assignments_with_due_date_attempts_and_best_score(student: Any) -> None:
    Assignment.objects.filter(slug="detach").update(max_attempts=3, due_at="2099-05-01T12:00:00Z")
    html = logged_in(student).get("/").content.decode()
    for slug in ("positive-gradient", "visual-walkthrough", "untracked-leaf"):
        assert f'href="/assignments/{slug}/"' in html
    row = html[html.index('href="/assignments/detach/"'):]
    row = row[:row.index("</tr>")]
    assert "2099" in row and "3 of 3" in row and "—" in row
    assert "unlimited" in html


@pytest.mark.django_db
def test_the_assignment_page_has_the_statement_and_one_labelled_input_per_part(student: Any) -> None:
    html = logged_in(student).get("/assignments/visual-walkthrough/").content.decode()
    assert "<h1>0. Visual walkthrough: z = xy + x²</h1>" in html
    assert "$z = x y + x^{2}$" in html  # left for KaTeX, not mangled by Markdown
    assert "<code>x.grad</code>" in html
    for key, dom_id in (("x.grad", "answer-x-grad"), ("y.grad", "answer-y-grad")):
        assert f'<label for="{dom_id}"><code>{key}</code>' in html
        assert re.search(rf'<input[^>]*name="{re.escape(key)}"[^>]*aria-describedby="{dom_id}-help"', html) or \
            re.search(rf'<input[^>]*aria-describedby="{dom_id}-help"[^>]*name="{re.escape(key)}"', html)
    assert "<code>3/8</code>" in html and "<code>[0.5, -1, 2.5]</code>" in html  # formats, not seed answers
    assert "their contributions add" in html  # the part's own hint
    assert 'aria-live="polite"' in html and 'hx-post="/assignments/visual-walkthrough/"' in html
    assert "/static/vendor/htmx/htmx.min.js" in html and "/static/vendor/katex/katex.min.js" in html
    assert "x = torch.tensor(x0" not in html and "Expected" not in html


@pytest.mark.django_db
def test_the_vendored_assets_are_served_locally(student: Any) -> None:
    from django.contrib.staticfiles import finders

    for asset in ("vendor/htmx/htmx.min.js", "vendor/katex/katex.min.js", "vendor/katex/katex.min.css",
                  "vendor/katex/contrib/auto-render.min.js", "vendor/katex/fonts/KaTeX_Main-Regular.woff2",
                  "css/app.css", "js/app.js"):
        assert finders.find(asset), asset
    html = logged_in(student).get("/").content.decode()
    assert "cdn" not in html.lower() and "https://" not in html


@pytest.mark.django_db
def test_an_unreadable_answer_is_shown_beside_its_field_keeps_the_text_and_uses_no_attempt(student: Any) -> None:
    client = logged_in(student)
    response = post_answers(client, "visual-walkthrough", {"x.grad": "seven", "y.grad": "2"})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'value="seven"' in html and 'value="2"' in html
    assert re.search(r'<p class="error" id="answer-x-grad-error">[^<]+</p>', html)
    assert 'aria-invalid="true"' in html and "answer-x-grad-help answer-x-grad-error" in html
    assignment = Assignment.objects.get(slug="visual-walkthrough")
    assert attempts_used(student=student.user, assignment=assignment) == 0


@pytest.mark.django_db
def test_an_empty_form_asks_for_an_answer(student: Any) -> None:
    response = post_answers(logged_in(student), "visual-walkthrough", {"x.grad": "", "y.grad": "  "})
    assert response.status_code == 400 and b'role="alert"' in response.content


@pytest.mark.django_db
def test_a_policy_refusal_is_a_clear_message(student: Any) -> None:
    Assignment.objects.filter(slug="detach").update(closes_at="2000-01-01T00:00:00Z")
    response = post_answers(logged_in(student), "detach", {"x.grad": "4"})
    assert response.status_code == 403
    assert b'<div class="alert" role="alert"><p>This assignment is closed.</p></div>' in response.content


@pytest.mark.django_db
def test_an_htmx_submission_returns_the_form_and_a_polling_status_without_a_redirect(student: Any) -> None:
    response = post_answers(logged_in(student), "visual-walkthrough", {"x.grad": "4"}, HX_Request="true")
    assert response.status_code == 200
    html = response.content.decode()
    submission = Submission.objects.get(student=student.user)
    assert html.lstrip().startswith("<form") and 'value="4"' in html
    assert '<section id="status-region" hx-swap-oob="innerHTML">' in html
    assert f'hx-get="/submissions/{submission.id}/status/" hx-trigger="load delay:300ms"' in html
    assert 'id="assignment-meta" class="meta" hx-swap-oob="true"' in html
    assert "<html" not in html


@pytest.mark.django_db
def test_a_plain_form_post_redirects_to_the_submission_page(student: Any) -> None:
    client = logged_in(student)
    response = post_answers(client, "visual-walkthrough", {"x.grad": "4"})
    submission = Submission.objects.get(student=student.user)
    assert response.status_code == 302 and response["Location"] == f"/submissions/{submission.id}/"
    page = client.get(response["Location"]).content.decode()
    assert "Queued" in page and '<meta http-equiv="refresh"' in page  # refreshes itself without JavaScript
    again = client.get("/assignments/visual-walkthrough/").content.decode()
    assert 'value="4"' in again and f"submission-{submission.id}" in again  # the last answer and its status


@pytest.mark.integration
@pytest.mark.parametrize("slug", ["positive-gradient", "non-scalar", "untracked-leaf", "visual-walkthrough"])
def test_the_web_form_grades_seed_answers_with_full_marks(live_db: None, worker: Any, student: Any,
                                                          slug: str) -> None:
    answers = {**answers_for(slug), **code_for(slug)}  # numbers, formulas and code, one field each
    client = logged_in(student)
    response = post_answers(client, slug, answers)
    assert response.status_code == 302
    submission_id = int(response["Location"].rstrip("/").rsplit("/", 1)[1])
    html = wait_status(client, submission_id)
    assert "incorrect" not in html and html.count("correct</strong>") == len(answers)
    max_score = sum(part.points for part in Assignment.objects.get(slug=slug).parts.all())
    assert f"<strong>{max_score:g} / {max_score:g}</strong>" in html
    home = client.get("/").content.decode()
    row = home[home.index(f'href="/assignments/{slug}/"'):]
    assert f"{max_score:g} / {max_score:g}" in row[:row.index("</tr>")]


@pytest.mark.integration
def test_wrong_answer_feedback_names_the_missing_path_and_shows_the_graph(live_db: None, worker: Any, student: Any,
                                                                          instructor: Any) -> None:
    client = logged_in(student)
    post_answers(client, "visual-walkthrough", {"x.grad": "4", "y.grad": "2"}, HX_Request="true")
    submission = Submission.objects.get(student=student.user)
    html = wait_status(client, submission.id)
    assert "<strong>1 / 5</strong>" in html
    wrong = html[html.index('data-part="x.grad"'):html.index('data-part="y.grad"')]
    assert "incorrect" in wrong and "x → mul → add → z" in wrong
    assert f'<img class="graph" src="/submissions/{submission.id}/graph.svg?part=x.grad"' in wrong
    assert "Expected" not in html
    graph = client.get(f"/submissions/{submission.id}/graph.svg?part=x.grad")
    assert graph.status_code == 200 and graph["Content-Type"].startswith("image/svg+xml")
    assert b"<svg" in graph.content and graph["Content-Security-Policy"].startswith("default-src 'none'")
    assert "frame-ancestors 'self'" in graph["Content-Security-Policy"]  # default-src does not cover framing
    assert client.get(f"/submissions/{submission.id}/graph.svg?part=nope").status_code == 404

    as_instructor = logged_in(instructor).get(f"/submissions/{submission.id}/status/").content.decode()
    assert "Expected (shown to instructors only): <code>7.0</code>" in as_instructor


@pytest.mark.django_db
def test_history_lists_only_my_submissions_to_that_assignment(student: Any, other_student: Any) -> None:
    post_answers(logged_in(other_student), "detach", {"x.grad": "99"})
    client = logged_in(student)
    post_answers(client, "detach", {"x.grad": "12"})
    post_answers(client, "detach", {"x.grad": "4"})
    post_answers(client, "dead-relu", {"x.grad": "1"})
    html = client.get("/assignments/detach/submissions/").content.decode()
    assert "<code>x.grad = 12</code>" in html and "<code>x.grad = 4</code>" in html
    assert "x.grad = 99" not in html and "x.grad = 1<" not in html
    assert html.index(">#2</a>") < html.index(">#1</a>")  # newest first


@pytest.mark.django_db
def test_healthz_reports_database_and_broker_without_login(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response["Cache-Control"].startswith("max-age=0")
    assert response.json()["database"] == "ok" and response.json()["broker"] == "ok"
    assert response.json()["sandbox"] == "ok"  # the test session's sandbox server
    assert client.head("/healthz").status_code == 200  # a monitor's HEAD probe (was 405)


@pytest.mark.django_db
def test_an_assignment_page_answers_head(student: Any) -> None:
    assert logged_in(student).head("/assignments/visual-walkthrough/").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/lti/jwks/", "/lti/login/"])
def test_the_lti_endpoints_answer_head_as_they_answer_get(client: Client, path: str) -> None:
    """A platform's or a monitor's HEAD probe of the key set got 405 where GET gives the JWKS."""
    assert client.head(path).status_code == client.get(path).status_code != 405


@pytest.mark.django_db
def test_healthz_names_an_unreachable_sandbox(client: Client, settings: Any, tmp_path: Any) -> None:
    settings.GRADER_REFERENCE_RUNNER = "grading.reference.SandboxRunner"
    settings.SANDBOX_SOCKET = str(tmp_path / "nobody-listens.sock")
    response = client.get("/healthz")
    assert response.json()["sandbox"].startswith("unreachable")
    assert response.status_code == 503  # code parts and new references cannot be graded


@pytest.mark.django_db
def test_healthz_answers_ok_within_a_second_while_every_sandbox_slot_is_busy(
        client: Client, sandbox_socket: str) -> None:
    """It answered 503 "sandbox unreachable" while two students' looping code held both slots."""
    import threading

    from sandbox import Limits, run_job
    from sandbox.client import status

    slots = status(socket_path=sandbox_socket)["slots"]
    loop = {"source": "while True:\n    pass\n", "limits": Limits(wall_seconds=3, cpu_seconds=3),
            "socket_path": sandbox_socket}
    loopers = [threading.Thread(target=run_job, kwargs=loop) for _ in range(slots + 1)]
    for looper in loopers:
        looper.start()
    try:
        deadline = time.monotonic() + 2
        while status(socket_path=sandbox_socket)["busy"] < slots and time.monotonic() < deadline:
            time.sleep(0.05)
        started = time.monotonic()
        response = client.get("/healthz")
        assert time.monotonic() - started < 1.0
        assert response.status_code == 200 and response.json()["sandbox"] == "ok"
        assert response.json()["sandbox_load"] == f"{slots} of {slots} slots busy"
    finally:
        for looper in loopers:
            looper.join()


@pytest.mark.django_db
def test_healthz_leaves_out_the_sandbox_where_no_job_runs(client: Client, settings: Any, tmp_path: Any) -> None:
    settings.SANDBOX_USED = False  # SANDBOX_ENDPOINTS=none: web, beat, the LMS lane
    settings.SANDBOX_SOCKET = str(tmp_path / "nobody-listens.sock")
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json()["sandbox"] == "not used here"


@pytest.mark.django_db
def test_healthz_is_503_when_the_broker_is_down(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    from config.celery_app import app

    monkeypatch.setattr(app.conf, "broker_url", "redis://127.0.0.1:9/0")
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["broker"].startswith("unreachable") and response.json()["database"] == "ok"


@pytest.mark.django_db
def test_untouched_starter_code_is_not_submitted(student: Any) -> None:
    client = logged_in(student)
    page = client.get("/assignments/accumulation/").content.decode()
    starter = Assignment.objects.get(slug="accumulation").parts.get(key="program").config["starter"]
    assert "x = torch.tensor([x0], requires_grad=True)" in page  # the code box starts with it
    post_answers(client, "accumulation", {"x.grad": "8", "program": starter.replace("\n", "\r\n")})
    submission = Submission.objects.get(student=student.user)
    assert submission.answers == {"x.grad": "8"} and submission.code == {}


@pytest.mark.django_db
def test_with_no_attempt_left_the_submit_button_is_off_and_says_why(student: Any) -> None:
    """It stayed enabled: pressing it answered 403, and only then "You have used all 1 attempts"."""
    Assignment.objects.filter(slug="detach").update(max_attempts=1)
    client = logged_in(student)
    page = client.get("/assignments/detach/").content.decode()
    assert "You have used" not in page and re.search(r'<button type="submit" class="primary">', page)
    post_answers(client, "detach", {"x.grad": "4"})
    page = client.get("/assignments/detach/").content.decode()
    assert "You have used your only attempt." in page  # not "all 1 attempts"
    assert re.search(r'<button type="submit" class="primary" disabled aria-describedby="no-attempts-left">', page)


def test_a_code_answer_keeps_its_lines_beside_feedback_that_quotes_them() -> None:
    """Shown inline, `x = …\\nb = a.clone()` ran onto one line while the message said "Line 3 (…)"."""
    from django.template.loader import render_to_string

    part = {"part": "frozen", "answer": "x = 1\na = x**2\nb = a.clone()\n", "correct": False, "score": 0,
            "max_score": 1, "diagnosis": {"message": "Line 3 (`b = a.clone()`) keeps the graph.", "paths": []}}
    html = render_to_string("grader/_feedback.html", {"document": {"score": 0, "max_score": 1, "parts": [part]}})
    block = html[html.index('class="answer-code"'):]
    assert block.index(">1<") < block.index(">2<") < block.index(">3<")  # numbered, one line each
    assert "clone" in block and '<code class="answer">x = 1' not in html
    several = {**part, "answer": "4", "expected": {"w.grad": [1.0, 2.0], "b.grad": [1.0]}}
    html = render_to_string("grader/_feedback.html", {"document": {"score": 0, "max_score": 1, "parts": [several]},
                                                      "expected_shown": True, "is_staff": True})
    assert "<code>w.grad = [1.0, 2.0]; b.grad = [1.0]</code>" in html  # not the dict's repr
    one_line = {**part, "answer": "4"}
    html = render_to_string("grader/_feedback.html", {"document": {"score": 0, "max_score": 1, "parts": [one_line]}})
    assert '<code class="answer">4</code>' in html and "answer-code" not in html


@pytest.mark.django_db
def test_readiness_stays_ok_while_the_sandbox_cannot_take_a_job(client: Client, settings: Any, tmp_path: Any) -> None:
    settings.GRADER_READY_CACHE_S = 0
    settings.SANDBOX_SOCKET = str(tmp_path / "nobody-listens.sock")  # every slot busy looks the same to a probe
    assert client.get("/healthz").status_code == 503  # the operator's full look names it
    response = client.get("/healthz/ready")
    assert response.status_code == 200 and response.json() == {"status": "ok"}  # anonymous: no details
    assert client.get("/healthz/live").json() == {"status": "ok"}


@pytest.mark.django_db
def test_readiness_is_503_without_the_broker_and_checks_once_per_interval(
        client: Client, settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from config.celery_app import app
    from grader import selectors

    settings.GRADER_READY_CACHE_S = 0
    monkeypatch.setattr(app.conf, "broker_url", "redis://127.0.0.1:9/0")
    response = client.get("/healthz/ready")
    assert response.status_code == 503 and response.json() == {"status": "unavailable"}
    settings.GRADER_READY_CACHE_S = 60
    checks: list[int] = []
    monkeypatch.setattr(selectors, "_database_state", lambda: checks.append(1) or "ok")
    for _ in range(5):
        client.get("/healthz/ready")
    assert len(checks) <= 1  # a probe storm costs one check per interval


@pytest.mark.django_db
def test_a_status_poll_that_could_not_wait_asks_again_later_not_sooner(student: Any, settings: Any) -> None:
    settings.GRADER_WAIT_SLOTS = 0  # every waiting slot of the process taken: the poll answers at once
    client = logged_in(student)
    post_answers(client, "visual-walkthrough", {"x.grad": "4"})
    submission = Submission.objects.get(student=student.user)  # no worker here: it stays queued
    html = client.get(f"/submissions/{submission.id}/status/").content.decode()
    assert 'hx-trigger="load delay:2000ms"' in html


@pytest.mark.django_db
def test_a_pending_job_page_asks_less_often_as_the_job_ages(instructor: Any) -> None:
    from datetime import timedelta

    from assignments.models import AuthoringJob, Course
    from authoring.job_views import poll_ms
    from infra import clock

    job = AuthoringJob(kind=AuthoringJob.Kind.PREVIEW, course=Course.objects.first(), created_at=clock.now())
    delays = []
    for age_s in (0, 5, 60):
        job.created_at = clock.now() - timedelta(seconds=age_s)
        delays.append(poll_ms(job))
    assert delays == sorted(delays) and delays[0] <= 100 and delays[-1] >= 2000
