"""Regression tests for hardening: each 500 on malformed input, each unsafe
default or missing header, login and token throttling, tokens, off-site images, help text."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from conftest import ROOT
from grader.forms import ACCEPTED_FORMATS
from grader.models import Submission
from grader.tokens import ApiToken, token_create, tokens_revoke
from tests.clients import api, logged_in
from tests.seed_answers import NUMERIC

URL = "/api/v1/assignments/visual-walkthrough/submissions/"


def post_raw(person: Any, body: bytes) -> Any:
    return api(person).generic("POST", URL, body, content_type="application/json")


# --- malformed input: 400 with a message, nothing stored --------------------------

@pytest.mark.django_db
@pytest.mark.parametrize(("name", "body"), [
    ("nested 100,000 deep", b'{"answers": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    ("nested objects", b'{"answers": {"x.grad": ' + b'{"a": ' * 50 + b"1" + b"}" * 50 + b"}}"),
    ("lone surrogate key", b'{"answers": {"\\ud800": "7"}}'),
    ("lone surrogate value", b'{"answers": {"x.grad": "7\\udfff"}}'),
    ("lone surrogate in code", b'{"code": {"grad_z": "def grad_z(x, y):\\n    return \\"\\ud83d\\", 1\\n"}}'),
    ("NaN constant", b'{"answers": {"x.grad": NaN}}'),
    ("not UTF-8", b'{"answers": {"x.grad": "\xff"}}'),
    ("not JSON", b'{"answers": '),
])
def test_malformed_json_is_a_400_with_a_message(student: Any, name: str, body: bytes) -> None:
    response = post_raw(student, body)
    assert response.status_code == 400, (name, response.status_code)
    assert response.json()["detail"]
    assert not Submission.objects.filter(student=student.user).exists()


HOSTILE_CODE = {
    "19,000 unary minuses": "-" * 19_000 + "1",
    "9,900-step attribute chain": "x" + ".a" * 9_900,
    "2,800 nested lambdas (1.4 s to compile)": "lambda:" * 2_800 + "0",
    "19,000 not": "not " * 4_900 + "x",
    "power tower": "x" + "**x" * 6_000,
    "brackets 5,000 deep": "(" * 5_000 + ")" * 5_000,
}


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(HOSTILE_CODE))
def test_code_that_crashes_or_stalls_compile_is_a_400_and_cheap(student: Any, name: str) -> None:
    started = time.perf_counter()
    response = api(student).post(URL, {"code": {"grad_z": HOSTILE_CODE[name]}}, format="json")
    elapsed = time.perf_counter() - started
    assert response.status_code == 400, (name, response.status_code)
    assert response.json()["errors"]["grad_z"]
    assert elapsed < 1.0, f"{name}: the web process spent {elapsed:.2f} s"  # bounded, not 1.4 s or a crash
    assert not Submission.objects.filter(student=student.user).exists()


@pytest.mark.django_db
def test_the_web_form_refuses_hostile_code_beside_its_field(student: Any) -> None:
    response = logged_in(student).post("/assignments/visual-walkthrough/", {"grad_z": "-" * 19_000 + "1"})
    assert response.status_code == 400
    assert "unary operators" in response.content.decode()


@pytest.mark.django_db
def test_ordinary_code_with_syntax_errors_is_still_named_precisely(student: Any) -> None:
    response = api(student).post(URL, {"code": {"grad_z": "def grad_z(x, y:\n    return 1\n"}}, format="json")
    assert response.status_code == 400 and "line 1" in response.json()["errors"]["grad_z"]


@pytest.mark.django_db
@pytest.mark.parametrize("slug", sorted(NUMERIC))
def test_the_numeric_help_text_answers_no_part_of_the_course(slug: str) -> None:
    for key in NUMERIC[slug]:
        for example in ACCEPTED_FORMATS:
            out = StringIO()
            call_command("grade", slug, f"{key}={example}", "--json", stdout=out)
            [part] = [p for p in json.loads(out.getvalue())["parts"] if p["part"] == key]
            assert part["correct"] is False, f"the help example {example!r} answers {slug} {key}"


# --- safe defaults ------------------------------------------------------------------

def _settings_import(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY")}
    return subprocess.run([sys.executable, "-c", "import django; django.setup(); from django.conf import settings; "
                           "print('DEBUG', settings.DEBUG)"], cwd=ROOT, capture_output=True, text=True,
                          env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings", **env}, timeout=60)


def test_without_a_secret_key_nothing_starts() -> None:
    out = _settings_import()
    assert out.returncode != 0 and "SECRET_KEY must be set" in out.stderr


def test_manage_py_beside_make_run_uses_the_key_it_wrote_and_the_environment_wins(tmp_path: Path) -> None:
    """A newcomer's second terminal (`python manage.py create_user …` while `make run` serves) has
    no SECRET_KEY exported; manage.py takes the one `make run` keeps in run/secret_key."""
    shutil.copy(ROOT / "manage.py", tmp_path / "manage.py")  # its run/ is the temp dir's
    clean = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    show = [sys.executable, str(tmp_path / "manage.py"), "shell", "-c",
            "from django.conf import settings; print('KEY', settings.SECRET_KEY)"]

    def run(**env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(show, cwd=ROOT, capture_output=True, text=True, timeout=60,
                              env={**clean, "PYTHONPATH": str(ROOT), **env})

    without = run()
    assert without.returncode != 0 and "SECRET_KEY must be set" in without.stderr
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "secret_key").write_text("written-by-make-run\n")
    assert "KEY written-by-make-run" in run().stdout
    assert "KEY from-the-environment" in run(SECRET_KEY="from-the-environment").stdout


def test_debug_is_off_unless_asked_for() -> None:
    assert "DEBUG False" in _settings_import(SECRET_KEY="k").stdout
    assert "DEBUG True" in _settings_import(SECRET_KEY="k", DEBUG="1").stdout


@pytest.mark.django_db
def test_a_404_lists_no_url_patterns(client: Client) -> None:
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert "admin/" not in response.content.decode() and "api/v1/" not in response.content.decode()


@pytest.mark.django_db
def test_every_html_page_has_a_csp_without_inline_scripts(student: Any, client: Client) -> None:
    pages = [client.get("/accounts/login/"), logged_in(student).get("/"),
             logged_in(student).get("/assignments/visual-walkthrough/")]
    for response in pages:
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
        assert "frame-ancestors 'self'" in policy and "img-src 'self'" in policy
        html = response.content.decode()
        assert "<script>" not in html and "<script " not in html.replace("<script defer src=", "")


@pytest.mark.django_db
def test_frame_ancestors_follow_the_setting_and_the_hook(student: Any, settings: Any) -> None:
    settings.CSP_FRAME_ANCESTORS = ["'self'", "https://lms.example.edu"]
    settings.GRADER_FRAME_ANCESTORS_HOOK = "tests.test_hardening.lti_platforms"
    policy = logged_in(student).get("/")["Content-Security-Policy"]
    assert "frame-ancestors 'self' https://lms.example.edu https://canvas.example.org" in policy


@pytest.mark.django_db
def test_the_json_api_is_not_offered_to_lms_frames(student: Any, settings: Any) -> None:
    settings.GRADER_FRAME_ANCESTORS_HOOK = "tests.test_hardening.lti_platforms"
    response = api(student).get("/api/v1/assignments/")
    assert response.status_code == 200
    assert "frame-ancestors 'self';" in response["Content-Security-Policy"] + ";"
    assert "canvas.example.org" not in response["Content-Security-Policy"]


def lti_platforms(request: Any) -> list[str]:
    return ["https://canvas.example.org", "https://lms.example.edu"]


@pytest.mark.django_db
def test_pages_and_api_answers_with_student_work_are_not_stored(student: Any) -> None:
    submission = Submission.objects.create(student=student.user, assignment_id=_assignment_id(),
                                           answers={"x.grad": "4"}, attempt=1)
    for response in [logged_in(student).get(f"/submissions/{submission.id}/"), logged_in(student).get("/"),
                     api(student).get(f"/api/v1/submissions/{submission.id}/"),
                     api(student).get("/api/v1/assignments/")]:
        assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]


def _assignment_id() -> int:
    from assignments.models import Assignment

    return Assignment.objects.get(slug="visual-walkthrough").id


@pytest.mark.django_db
def test_hsts_is_sent_on_https(student: Any) -> None:
    response = logged_in(student).get("/", secure=True)
    assert int(response["Strict-Transport-Security"].split("max-age=")[1].split(";")[0]) >= 31_536_000


def test_markdown_loads_no_off_site_images() -> None:
    from assignments.templatetags.statement import markdown

    html = markdown("![t](https://tracker.example/p.png) ![p](//cdn.example/p.png) ![d](data:image/png;base64,AA) "
                    "![ok](/static/img/graph.png)")
    assert "tracker.example" not in html and "cdn.example" not in html and "data:image" not in html
    assert '<img src="/static/img/graph.png" alt="ok">' in html


# --- throttling and tokens -------------------------------------------------------------

@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_repeated_wrong_passwords_lock_the_login(student: Any, path: str, settings: Any) -> None:
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        assert client.post(path, {"username": student.user.username, "password": "wrong"}).status_code in (200, 429)
    locked = client.post(path, {"username": student.user.username, "password": student.password})
    assert locked.status_code == 429  # even the right password, until the cool-off ends
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_guessing_api_tokens_is_throttled(student: Any, settings: Any) -> None:
    client = APIClient(REMOTE_ADDR="10.9.8.7")
    client.credentials(HTTP_AUTHORIZATION="Token guessed-token-0000")
    statuses = [client.get("/api/v1/assignments/").status_code for _ in range(settings.AXES_FAILURE_LIMIT + 1)]
    assert statuses[0] == 401 and statuses[-1] == 429
    client.credentials(HTTP_AUTHORIZATION="Token guessed-token-9999")  # another key with the same prefix
    assert client.get("/api/v1/assignments/").status_code == 429
    assert api(student).get("/api/v1/assignments/").status_code == 200  # other addresses are not concerned


@pytest.mark.django_db
def test_bad_tokens_from_an_address_leave_the_valid_tokens_of_others_there_working(
        student: Any, other_student: Any, settings: Any) -> None:
    """A campus NAT: one client's broken script fails five times; everybody else behind the same address
    keeps working, while that key's prefix stays locked there."""
    broken = APIClient(REMOTE_ADDR="10.9.8.4")
    broken.credentials(HTTP_AUTHORIZATION="Token expired-or-mistyped-key")
    statuses = [broken.get("/api/v1/assignments/").status_code for _ in range(settings.AXES_FAILURE_LIMIT + 1)]
    assert statuses[0] == 401 and statuses[-1] == 429
    for person in (student, other_student):
        neighbour = APIClient(REMOTE_ADDR="10.9.8.4")
        neighbour.credentials(HTTP_AUTHORIZATION=f"Token {person.token}")
        assert neighbour.get("/api/v1/assignments/").status_code == 200
    assert broken.get("/api/v1/assignments/").status_code == 429


@pytest.mark.django_db
def test_a_lockout_of_a_prefix_holds_for_its_valid_token_whatever_redis_remembers(
        student: Any, settings: Any) -> None:
    from infra.redis_client import redis_client as _redis

    good = APIClient(REMOTE_ADDR="10.9.8.6")
    good.credentials(HTTP_AUTHORIZATION=f"Token {student.token}")
    assert good.get("/api/v1/assignments/").status_code == 200  # the prefix is now remembered as clean there
    guesser = APIClient(REMOTE_ADDR="10.9.8.6")
    guesser.credentials(HTTP_AUTHORIZATION=f"Token {student.token[:8]}guessed-rest-0001")  # aims at that token
    statuses = [guesser.get("/api/v1/assignments/").status_code for _ in range(settings.AXES_FAILURE_LIMIT + 1)]
    assert statuses[-1] == 429
    for key in _redis().scan_iter("grader:*:token-address-clean:10.9.8.6:*"):
        _redis().delete(key)  # e.g. a Redis restart: nothing remembered either way
    assert good.get("/api/v1/assignments/").status_code == 429
    assert api(student).get("/api/v1/assignments/").status_code == 200  # from elsewhere it works


@pytest.mark.django_db
def test_a_clean_address_with_a_valid_token_costs_no_lockout_query(student: Any) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client = APIClient(REMOTE_ADDR="10.9.8.5")
    client.credentials(HTTP_AUTHORIZATION=f"Token {student.token}")
    client.get("/api/v1/assignments/")
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/api/v1/assignments/").status_code == 200
    assert not [q for q in queries.captured_queries if "axes_accessattempt" in q["sql"]]


@pytest.mark.django_db
def test_tokens_are_stored_hashed_and_expire_and_can_be_revoked(student: Any) -> None:
    stored = ApiToken.objects.get(user=student.user)
    assert student.token not in {stored.key_hash, stored.prefix} and len(stored.key_hash) == 64
    assert stored.expires_at > timezone.now() + timedelta(days=30)
    assert api(student).get("/api/v1/assignments/").status_code == 200
    ApiToken.objects.filter(pk=stored.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert api(student).get("/api/v1/assignments/").status_code == 401
    fresh = token_create(user=student.user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {fresh}")
    assert client.get("/api/v1/assignments/").status_code == 200
    assert tokens_revoke(user=student.user) == 2  # the expired one and the fresh one
    assert client.get("/api/v1/assignments/").status_code == 401


@pytest.mark.django_db
def test_the_admin_never_shows_a_token_in_clear(student: Any) -> None:
    # The admin is for operators (`createsuperuser`), not instructors, who are not Django staff.
    operator = get_user_model().objects.create_superuser(f"operator-{student.user.pk}", password=None)
    admin = Client()
    admin.force_login(operator)
    listing = admin.get("/admin/grader/apitoken/")
    assert listing.status_code == 200
    page = listing.content.decode()
    assert student.token[:8] in page and student.token not in page
    token = ApiToken.objects.get(user=student.user)
    change = admin.get(f"/admin/grader/apitoken/{token.pk}/change/")
    assert change.status_code == 200
    detail = change.content.decode()
    assert token.prefix in detail and token.key_hash not in detail and student.token not in detail


def test_create_user_prints_a_working_token(live_db: None) -> None:
    from conftest import service_env

    name = f"token-{os.getpid()}-{time.monotonic_ns()}"
    out = subprocess.run([sys.executable, "manage.py", "create_user", name, "--role", "student", "--token"],
                         cwd=ROOT, env=service_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    key = out.stdout.strip().splitlines()[-1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/v1/assignments/").status_code == 200
    assert not ApiToken.objects.filter(key_hash=key).exists() and not ApiToken.objects.filter(prefix=key).exists()


@pytest.mark.django_db
def test_metrics_are_not_public(client: Client, student: Any, settings: Any) -> None:
    assert client.get("/metrics").status_code == 403
    assert logged_in(student).get("/metrics").status_code == 403
    settings.METRICS_TOKEN = "s3cret-metrics"
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret-metrics")
    assert response.status_code == 200
    text = response.content.decode()
    assert 'grader_queue_depth{queue="' in text and "grader_latency_seconds_bucket" in text


def test_log_lines_carry_the_submission_id_as_json() -> None:
    import logging

    from config.structured_logging import JsonFormatter, SubmissionFilter, submission_context

    record = logging.LogRecord("sandbox.client", logging.INFO, __file__, 1, "job sent", None, None)
    with submission_context(42):
        SubmissionFilter().filter(record)
    line = json.loads(JsonFormatter().format(record))
    assert line["submission_id"] == 42 and line["message"] == "job sent" and line["logger"] == "sandbox.client"
    outside = logging.LogRecord("grader", logging.INFO, __file__, 1, "idle", None, None)
    SubmissionFilter().filter(outside)
    assert "submission_id" not in json.loads(JsonFormatter().format(outside))


def test_the_sandbox_logs_the_submission_it_runs_code_for(live_db: None, worker: Any, student: Any) -> None:
    """Web and worker lines carry submission_id; the sandbox server's JSON lines about its jobs do too."""
    from assignments.models import Assignment
    from grader.workflow import submission_create
    from tests.drills import wait_graded

    log = ROOT / "test-output" / "sandbox.log"  # the session's sandbox server (conftest.py)
    start = log.stat().st_size
    code = {"grad_z": "def grad_z(x, y):\n    return y + 2 * x, x\n"}  # by hand: the torch-less server
    submission = submission_create(student=student.user, assignment=Assignment.objects.get(slug="visual-walkthrough"),
                                   answers={}, code=code)
    [graded] = wait_graded([submission.id])
    assert graded.status == "graded"
    deadline = time.monotonic() + 5  # the proxy logs once it has answered
    while not (mine := [entry for entry in _json_lines(log, start) if entry.get("submission_id") == submission.id]):
        assert time.monotonic() < deadline, "no sandbox log line names the submission"
        time.sleep(0.05)
    assert mine[0]["logger"] == "sandbox" and mine[0]["message"].startswith(f"seat {mine[0]['seat']}: ok")


def _json_lines(path: Any, start: int) -> list[dict[str, Any]]:
    with open(path, "rb") as handle:
        handle.seek(start)
        lines = handle.read().decode(errors="replace").splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")]
