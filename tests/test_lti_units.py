"""Pieces of the LTI tool on their own: role mapping, key rotation, framing, registration."""

from __future__ import annotations

import json
import threading
import time
import uuid
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from django.utils import timezone
from lti_tool.models import Key, LtiDeployment, LtiRegistration
from pylti1p3.exception import LtiException

from lti.framing import platform_origins, platform_origins_forget
from lti.keys import key_rotate, signing_key, tool_jwks
from lti.models import ContextCourse
from lti.roles import course_role_from_lti
from lti.validation import TimedSession, platform_jwks

MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
REGISTER = ["--name", "School LMS", "--issuer", "https://lms.school.example", "--client-id", "c-1",
            "--auth-url", "https://lms.school.example/auth", "--token-url", "https://lms.school.example/token",
            "--keyset-url", "https://lms.school.example/jwks", "--deployment", "d-1"]


@pytest.mark.parametrize(("roles", "expected"), [
    ([MEMBERSHIP + "Learner"], "student"),
    ([MEMBERSHIP + "Instructor"], "instructor"),
    (["Instructor"], "instructor"),  # the short form NRPS and Moodle send
    ([MEMBERSHIP + "Instructor", "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"],
     "ta"),
    (["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator", MEMBERSHIP + "Learner"], "student"),
    ([MEMBERSHIP + "Mentor"], "student"),
    ([], "student"),
])
def test_lti_roles_map_onto_course_roles(roles: list[str], expected: str) -> None:
    assert course_role_from_lti(roles) == expected


@pytest.mark.django_db
@override_settings(LTI_KEY_PUBLISH_SECONDS=3600)
def test_a_rotated_key_is_published_at_once_but_signs_only_after_the_publish_delay() -> None:
    Key.objects.all().delete()
    old = signing_key()
    Key.objects.filter(id=old.id).update(datetime_created=timezone.now() - timedelta(days=30))
    new = key_rotate(retire_after=None)
    published = {key["kid"] for key in tool_jwks()["keys"]}
    assert {str(old), str(new)} <= published
    assert signing_key().id == old.id  # platforms may still hold yesterday's JWKS
    key_rotate(retire_after=timedelta(days=7))  # the old key still signs: it stays published
    assert str(old) in {key["kid"] for key in tool_jwks()["keys"]}
    Key.objects.filter(id=new.id).update(datetime_created=timezone.now() - timedelta(hours=2))
    assert signing_key().id == new.id
    call_command("lti_rotate_keys", stdout=StringIO())  # now the old one is superseded and retired
    assert str(old) not in {key["kid"] for key in tool_jwks()["keys"]}
    assert str(new) in {key["kid"] for key in tool_jwks()["keys"]}


@pytest.mark.django_db
def test_lti_register_creates_then_updates_and_prints_the_tool_urls() -> None:
    out = StringIO()
    call_command("lti_register", *REGISTER, "--course", "autograd-101", "--context", "lms-course-7",
                 "--base-url", "https://grader.example", stdout=out)
    assert "created" in out.getvalue() and "https://grader.example/lti/login/" in out.getvalue()
    assert "https://grader.example/lti/jwks/" in out.getvalue()
    LtiDeployment.objects.filter(deployment_id="d-1").update(is_active=False)
    out = StringIO()
    call_command("lti_register", *REGISTER[:-2], "--deployment", "d-1", "--name", "Renamed", stdout=out)
    registration = LtiRegistration.objects.get(issuer="https://lms.school.example", client_id="c-1")
    assert "updated" in out.getvalue() and registration.name == "Renamed"
    assert LtiDeployment.objects.get(registration=registration, deployment_id="d-1").is_active
    bound = ContextCourse.objects.get(context__deployment__deployment_id="d-1")  # only the LMS course it names
    assert (bound.context.id_on_platform, bound.course.slug) == ("lms-course-7", "autograd-101")


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "message"), [
    (["--token-url", "not a url"], "--token-url"),
    (["--course", "no-such-course"], "no-such-course"),
    (["--frame-origin", "https://tenant.example/path"], "--frame-origin"),
])
def test_lti_register_refuses_bad_input_and_writes_nothing(change: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("lti_register", *REGISTER, *change, stdout=StringIO())
    assert not LtiRegistration.objects.filter(client_id="c-1").exists()


@pytest.mark.django_db
def test_only_registered_platforms_may_frame_the_tool() -> None:
    platform_origins_forget()
    call_command("lti_register", *REGISTER, "--frame-origin", "https://school.instructure.example", stdout=StringIO())
    platform_origins_forget()
    assert platform_origins() == ["https://lms.school.example", "https://school.instructure.example"]
    response = Client().get("/accounts/login/")
    assert _frame_ancestors(response) == (
        "frame-ancestors 'self' https://lms.school.example https://school.instructure.example")
    assert response["X-Frame-Options"] == "SAMEORIGIN"  # for browsers without CSP; the others obey frame-ancestors
    LtiRegistration.objects.update(is_active=False)
    platform_origins_forget()
    assert _frame_ancestors(Client().get("/accounts/login/")) == "frame-ancestors 'self'"


def _frame_ancestors(response: Any) -> str:
    directives = [d.strip() for d in response["Content-Security-Policy"].split(";")]
    return next(d for d in directives if d.startswith("frame-ancestors"))


@pytest.mark.django_db
def test_the_setup_page_lists_the_urls_to_paste_into_canvas_and_moodle() -> None:
    page = Client().get("/lti/setup/").content.decode()
    for path in ("/lti/login/", "/lti/launch/", "/lti/jwks/"):
        assert f"http://testserver{path}" in page
    assert "Moodle" in page and "Developer Keys" in page
    # the command the page gives is the README's: without --frame-origin the LMS cannot frame the tool
    assert "--frame-origin LMS_ORIGIN --base-url http://testserver" in page
    canvas = Client().get("/lti/setup/canvas.json").json()
    assert canvas["oidc_initiation_url"] == "http://testserver/lti/login/"
    assert canvas["public_jwk_url"] == "http://testserver/lti/jwks/"
    assert "https://purl.imsglobal.org/spec/lti-ags/scope/score" in canvas["scopes"]


@pytest.mark.django_db
def test_a_get_or_a_garbage_post_to_the_launch_is_a_4xx_page() -> None:
    assert Client().get("/lti/launch/").status_code == 405
    response = Client().post("/lti/launch/", {"id_token": "x"})
    assert response.status_code == 400 and b"refused" in response.content
    response = Client().get("/lti/login/", {"iss": "https://nobody.example", "login_hint": "u",
                                            "target_link_uri": "http://testserver/lti/launch/",
                                            "lti_cookies_checked": "1"})
    assert response.status_code == 400 and b"registration" in response.content


class _SlowKeys(BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        if self.path == "/slow":
            time.sleep(3)
        body = json.dumps({"keys": []}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except BrokenPipeError:  # the tool gave up waiting, as it should
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


@override_settings(LTI_HTTP_TIMEOUT=0.5)
def test_platform_keys_are_fetched_with_a_timeout_and_cached() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowKeys)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        started = time.monotonic()
        with pytest.raises(LtiException, match="could not be fetched"):
            platform_jwks(url=f"{base}/slow", session=TimedSession())
        assert time.monotonic() - started < 2.5  # the hung platform did not hold the request
        url = f"{base}/keys-{uuid.uuid4().hex}"
        before = _SlowKeys.hits
        for _ in range(3):
            assert platform_jwks(url=url, session=TimedSession()) == {"keys": []}
        assert _SlowKeys.hits == before + 1
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.django_db
def test_the_oidc_login_accepts_post_and_checks_cookies_first() -> None:
    params = {"iss": "https://lms.school.example", "login_hint": "u-1", "lti_message_hint": "m",
              "target_link_uri": "http://testserver/lti/launch/", "client_id": "c-1"}
    page = Client().post("/lti/login/", params)
    assert page.status_code == 200 and b"data-lti-cookie-check" in page.content
    assert b'name="lti_cookies_checked" value="1"' in page.content and b'value="u-1"' in page.content
    call_command("lti_register", *REGISTER, stdout=StringIO())
    redirect = Client().post("/lti/login/", {**params, "lti_cookies_checked": "1"})
    assert redirect.status_code == 302
    assert redirect["Location"].startswith("https://lms.school.example/auth?")
    assert "redirect_uri=http%3A%2F%2Ftestserver%2Flti%2Flaunch%2F" in redirect["Location"]


def test_the_score_comment_sent_to_the_lms_says_only_what_the_students_feedback_level_shows() -> None:
    from types import SimpleNamespace

    from assignments.models import Release
    from lti.scores import _comment

    document = {"parts": [{"part": "w.grad", "correct": False, "score": 0, "max_score": 1, "expected": 7.0,
                           "diagnosis": {"kind": "wrong_local_derivative",
                                         "message": "You used 2 where the right one is 3.5"}}]}
    result: Any = SimpleNamespace(score=0.0, max_score=1.0, document=document)
    at_verdict = _comment(result, release=Release.VERDICT)
    assert "3.5" not in at_verdict and "7" not in at_verdict and "w.grad: incorrect" in at_verdict
    assert "right one is 3.5" in _comment(result, release=Release.WORDS)
