"""Authoring jobs hold no database transaction while a reference program runs, and one instructor's jobs
are bounded: how many wait or run at once, and how much sandbox time they spend."""

from __future__ import annotations

import http.cookiejar
import json
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any

import pytest
from django.db import connections, transaction

from assignments.models import Assignment, AuthoringJob
from assignments.services import course_demo
from authoring import publishing
from authoring.forms import catalog_json
from authoring.jobs import job_run
from catalog.errors import CatalogError
from grading.outside_runs import runs_outside, sandbox_allowance, sandbox_call
from grading.reference import SubprocessRunner
from tests.authoring_forms import GOOD_REFERENCE, form_post
from tests.clients import api, logged_in


class RecordingRunner(SubprocessRunner):
    """A fresh python per reference (no sandbox server needed), noting whether a transaction was open."""

    in_transaction: list[bool] = []

    def request(self, job: dict[str, Any]) -> Any:
        self.in_transaction.append(transaction.get_connection().in_atomic_block)
        return super().request(job)


def _data(slug: str, reference: str = GOOD_REFERENCE) -> dict[str, Any]:
    return {"slug": slug, "title": f"T {slug}", "statement": "s", "reference": reference,
            "params": {"x0": 1.5, "y0": -0.5}, "parts": [{"key": "x.grad"}, {"key": "y.grad"}]}


def _job(kind: str, *, user: Any, assignment: Assignment | None, payload: dict[str, Any]) -> AuthoringJob:
    """A job row as job_request stores it, without sending it to a worker: this test runs it."""
    return AuthoringJob.objects.create(kind=kind, course=course_demo(), assignment=assignment,
                                       requested_by=user, payload=payload)


def test_preview_publish_and_import_run_references_with_no_transaction_open(
        live_db: None, instructor: Any, settings: Any, monkeypatch: Any) -> None:
    settings.GRADER_REFERENCE_RUNNER = "tests.test_authoring_blocking.RecordingRunner"
    monkeypatch.setattr(RecordingRunner, "in_transaction", [])
    slug = f"outside-{uuid.uuid4().hex[:6]}"
    assignment = publishing.assignment_create(course=course_demo(), data=_data(slug))

    preview = _job(AuthoringJob.Kind.PREVIEW, user=instructor.user, assignment=assignment,
                   payload={"data": catalog_json(_data(slug)), "answers": {"x.grad": "9"}, "code": {}})
    job_run(job_id=preview.pk)
    preview.refresh_from_db()
    assert preview.status == "done" and not preview.result["preview"]["error"], preview.result
    assert preview.result["preview"]["trial"]["score"] == 1.0  # d(3x²)/dx at 1.5
    assert preview.sandbox_seconds > 0  # counted against the instructor's budget

    publish = _job(AuthoringJob.Kind.PUBLISH, user=instructor.user, assignment=assignment, payload={})
    job_run(job_id=publish.pk)
    publish.refresh_from_db()
    assert publish.result["version"] == 1

    other = f"outside-{uuid.uuid4().hex[:6]}"
    toml = (f'slug = "{other}"\ntitle = "T"\nstatement = "s"\nreference = """\n{GOOD_REFERENCE}"""\n'
            '[params]\nx0 = 1.5\ny0 = -0.5\n[[parts]]\nkey = "x.grad"\n[[parts]]\nkey = "y.grad"\n')
    imported = _job(AuthoringJob.Kind.IMPORT, user=instructor.user, assignment=None,
                    payload={"files": [[f"{other}.toml", toml]], "refused": []})
    job_run(job_id=imported.pk)
    imported.refresh_from_db()
    assert [o["state"] for o in imported.result["outcomes"]] == ["published"], imported.result
    assert Assignment.objects.get(slug=other).published

    assert RecordingRunner.in_transaction and not any(RecordingRunner.in_transaction), RecordingRunner.in_transaction


def test_runs_between_passes_are_remembered_and_failures_told_again() -> None:
    calls: list[str] = []

    def failing() -> Any:
        calls.append("fail")
        raise ValueError("the program fails")

    def body() -> tuple[Any, str]:
        first = sandbox_call("t", {"n": 1}, lambda: calls.append("one") or {"v": 1})
        try:
            sandbox_call("t", {"n": 2}, failing)
        except ValueError as exc:
            return first, str(exc)
        raise AssertionError("the failure was not told")

    assert runs_outside(body) == ({"v": 1}, "the program fails")
    assert calls == ["one", "fail"]  # each run once, whatever the number of passes
    with sandbox_allowance(0.0), pytest.raises(Exception, match="used its sandbox time"):
        sandbox_call("t", {"n": 3}, lambda: calls.append("never"))
    assert "never" not in calls


@pytest.mark.django_db
def test_a_publish_does_not_overwrite_an_edit_made_while_it_was_vetted(instructor: Any, monkeypatch: Any) -> None:
    slug = f"edited-{uuid.uuid4().hex[:6]}"
    assignment = publishing.assignment_create(course=course_demo(), data=_data(slug))
    publishing.assignment_save(assignment=assignment, data={**_data(slug), "title": "Vetted"})

    def vetted_while_edited(*, assignment: Assignment) -> list[Any]:
        publishing.assignment_save(assignment=Assignment.objects.get(pk=assignment.pk),
                                   data={**_data(slug), "title": "Edited meanwhile"})
        return []

    monkeypatch.setattr(publishing, "assignment_vet_working", vetted_while_edited)
    with pytest.raises(CatalogError, match="edited while it was being vetted"):
        publishing.assignment_publish(assignment=Assignment.objects.get(pk=assignment.pk), user=instructor.user,
                                      justifications={})
    kept = Assignment.objects.get(pk=assignment.pk)
    assert kept.version == 0 and kept.title == "Edited meanwhile"


@pytest.mark.django_db
def test_an_instructor_may_have_only_so_many_jobs_waiting(instructor: Any, settings: Any) -> None:
    settings.GRADER_AUTHORING_JOBS_PER_USER = 2
    client = logged_in(instructor)
    slug = f"cap-{uuid.uuid4().hex[:6]}"
    assert client.post("/staff/courses/autograd-101/assignments/new/", form_post(slug=slug)).status_code == 302
    for _ in range(2):
        assert client.post(f"/staff/assignments/{slug}/preview/", form_post(slug=slug)).status_code == 200
    refused = client.post(f"/staff/assignments/{slug}/preview/", form_post(slug=slug))
    assert refused.status_code == 429 and "at most 2 at a time" in refused.content.decode()
    page = client.post(f"/staff/assignments/{slug}/publish/", {})
    assert page.status_code == 429 and "at most 2 at a time" in page.content.decode()
    by_api = api(instructor).post(f"/api/v1/staff/assignments/{slug}/publish/", {}, format="json")
    assert by_api.status_code == 429 and "at most 2 at a time" in by_api.json()["detail"]
    assert AuthoringJob.objects.filter(requested_by=instructor.user).count() == 2
    AuthoringJob.objects.filter(requested_by=instructor.user).update(status="done")  # finished: room again
    assert client.post(f"/staff/assignments/{slug}/preview/", form_post(slug=slug)).status_code == 200


@pytest.mark.django_db
def test_an_instructor_past_the_sandbox_budget_is_told_to_wait(instructor: Any, settings: Any) -> None:
    from infra import clock

    settings.GRADER_AUTHORING_BUDGET_SECONDS = 30
    client = logged_in(instructor)
    slug = f"budget-{uuid.uuid4().hex[:6]}"
    assert client.post("/staff/courses/autograd-101/assignments/new/", form_post(slug=slug)).status_code == 302
    AuthoringJob.objects.create(kind="preview", course=course_demo(), requested_by=instructor.user, payload={},
                                status="done", finished_at=clock.now(), sandbox_seconds=31)
    refused = client.post(f"/staff/assignments/{slug}/preview/", form_post(slug=slug))
    assert refused.status_code == 429 and "used their sandbox time" in refused.content.decode()


# --- the site answers while a slow reference runs -------------------------------------------------

SLEEP_S = 4.0


def _http(opener: Any, url: str, data: dict[str, str] | None = None, headers: dict[str, str] | None = None,
          body: bytes | None = None) -> tuple[int, str, float]:
    encoded = body if body is not None else urllib.parse.urlencode(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=encoded, headers=headers or {})
    started = time.monotonic()
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, response.read().decode(), time.monotonic() - started
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), time.monotonic() - started


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _log_in(base: str, person: Any) -> tuple[int, float]:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect())
    _, page, _ = _http(opener, f"{base}/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token, page[:500]
    status, _, seconds = _http(opener, f"{base}/accounts/login/", {
        "csrfmiddlewaretoken": token.group(1), "username": person.user.username, "password": person.password},
        headers={"Referer": f"{base}/accounts/login/"})
    return status, seconds


def _submit(base: str, person: Any) -> tuple[int, float]:
    status, _, seconds = _http(urllib.request.build_opener(),
                               f"{base}/api/v1/assignments/visual-walkthrough/submissions/",
                               body=json.dumps({"answers": {"x.grad": "7"}}).encode(),
                               headers={"Authorization": f"Token {person.token}", "Content-Type": "application/json"})
    return status, seconds


@pytest.mark.integration
def test_logins_and_submissions_answer_while_a_preview_runs_a_slow_reference(
        live_db: None, web_server: str, instructor: Any, make_user: Any, settings: Any) -> None:
    settings.GRADER_REFERENCE_RUNNER = "grading.reference.SubprocessRunner"
    students = [make_user("student") for _ in range(3)]
    slug = f"slow-{uuid.uuid4().hex[:6]}"
    assignment = publishing.assignment_create(course=course_demo(), data=_data(slug))
    slow = _data(slug, reference=f"import time\ntime.sleep({SLEEP_S})\n{GOOD_REFERENCE}")
    job = _job(AuthoringJob.Kind.PREVIEW, user=instructor.user, assignment=assignment,
               payload={"data": catalog_json(slow), "answers": {}, "code": {}})

    def run() -> None:
        try:
            job_run(job_id=job.pk)
        finally:
            connections.close_all()

    worker = threading.Thread(target=run, daemon=True)
    started = time.monotonic()
    worker.start()
    time.sleep(1.5)  # the reference is running (a fresh python imports torch first, then sleeps)
    answers = []
    for person in students:
        answers.append(("login", *_log_in(web_server, person)))
        answers.append(("submit", *_submit(web_server, person)))
    still_running = AuthoringJob.objects.get(pk=job.pk).status == "running"
    worker.join(timeout=120)
    job.refresh_from_db()
    assert job.status == "done" and not job.result["preview"]["error"], job.result
    print(f"\nwhile a preview's reference sleeps {SLEEP_S:g} s: " +
          ", ".join(f"{kind} {status} in {seconds:.2f} s" for kind, status, seconds in answers))
    assert all(status in (302, 202) for _, status, _ in answers), answers
    assert max(seconds for _, _, seconds in answers) < 1.0, answers
    assert still_running and time.monotonic() - started > SLEEP_S, "the requests were not made while it ran"
