"""The operators' LMS platforms page and LTI Dynamic Registration against the test platform (in this process)."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings
from django.utils import timezone
from lti_tool.models import LtiDeployment, LtiRegistration

from assignments.services import course_demo
from lti.models import ContextCourse, FrameOrigin, UsedRegistrationUrl
from tests.lti_platform.inprocess import LAUNCH_URL, Platform
from tests.lti_platform.registration import CANVAS_CONFIGURATION, CANVAS_ISSUER
from tests.lti_platform.server import DEPLOYMENT, LmsPlatform

FORM = {"name": "School Moodle", "issuer": "https://moodle.school.example", "client_id": "abc123",
        "auth_url": "https://moodle.school.example/mod/lti/auth.php",
        "token_url": "https://moodle.school.example/mod/lti/token.php",
        "keyset_url": "https://moodle.school.example/mod/lti/certs.php", "deployment_id": "7",
        "frame_origins": "", "service_hosts": "", "course": "", "contexts": ""}


def _client(**flags: bool) -> Client:
    user = get_user_model().objects.create_user(username=f"u-{uuid.uuid4().hex[:8]}", password="pw", **flags)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def operator() -> Client:
    return _client(is_staff=True)


@pytest.mark.django_db
def test_only_operators_reach_the_platforms_page(instructor: Any) -> None:
    assert Client().get("/lti/platforms/").status_code == 302  # to the login page
    teacher = Client()
    teacher.force_login(instructor.user)
    for url in ("/lti/platforms/", "/lti/platforms/1/"):
        refused = teacher.get(url)
        assert refused.status_code == 403 and b"operators" in refused.content
    assert teacher.post("/lti/platforms/", FORM).status_code == 403
    assert not LtiRegistration.objects.filter(client_id="abc123").exists()


@pytest.mark.django_db
def test_an_operator_registers_a_platform_and_sees_it_listed_active(operator: Client) -> None:
    created = operator.post("/lti/platforms/", {**FORM, "frame_origins": "https://moodle.school.example\n"})
    registration = LtiRegistration.objects.get(issuer=FORM["issuer"], client_id="abc123")
    assert created.status_code == 302 and created["Location"] == f"/lti/platforms/{registration.pk}/"
    assert registration.is_active and registration.deployments.get().is_active
    page = operator.get("/lti/platforms/").content.decode()
    assert "School Moodle" in page and "<code>7</code>" in page and "last launch never" in page
    assert FrameOrigin.objects.filter(registration=registration).count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "field", "words"), [
    ({"auth_url": "not a url"}, "auth_url", "is not a URL"),
    ({"issuer": "moodle.school.example"}, "issuer", "http(s) URL"),
    ({"deployment_id": ""}, "deployment_id", "This field is required"),
    ({"course": "no-such-course", "contexts": "42"}, "course", "no course with slug"),
    ({"contexts": "42"}, "contexts", "needs --course"),
    ({"service_hosts": "https://x.example/path"}, "service_hosts", "host or host:port"),
    ({"frame_origins": "https://x.example/path"}, "frame_origins", "scheme://host"),
])
def test_a_bad_registration_is_refused_beside_its_field_and_stores_nothing(
        operator: Client, change: dict[str, str], field: str, words: str) -> None:
    refused = operator.post("/lti/platforms/", {**FORM, **change})
    assert refused.status_code == 400
    page = refused.content.decode()
    block = page[page.index(f'for="id_{field}"'):]
    block = block[:block.index('<div class="field')] if '<div class="field' in block else block
    assert 'class="error"' in block and words in block
    assert f'value="{FORM["name"]}"' in page  # what was typed stays
    assert not LtiRegistration.objects.filter(client_id="abc123").exists()


@pytest.mark.django_db
def test_an_operator_edits_binds_and_deactivates_and_launches_follow(operator: Client) -> None:
    platform = Platform().register()
    registration = LtiRegistration.objects.get(issuer=platform.base)
    url = f"/lti/platforms/{registration.pk}/"
    edit = {**FORM, "issuer": platform.base, "client_id": platform.client_id, "auth_url": f"{platform.base}/auth",
            "token_url": f"{platform.base}/token", "keyset_url": f"{platform.base}/jwks", "deployment_id": "",
            "name": "Renamed LMS", "course": course_demo().slug, "contexts": "ctx-9"}
    assert operator.post(url, {**edit, "deployment_id": ""}).status_code == 400  # a binding needs its deployment
    assert operator.post(url, {**edit, "deployment_id": platform.deployment_id}).status_code == 302
    registration.refresh_from_db()
    assert registration.name == "Renamed LMS"
    binding = ContextCourse.objects.get(context__id_on_platform="ctx-9", context__deployment=platform.deployment)
    assert binding.course.slug == edit["course"]

    opened = platform.launch(context_id="ctx-9", custom={"assignment": "positive-gradient"})
    assert opened.status_code == 302 and opened["Location"] == "/assignments/positive-gradient/"
    assert "last launch never" not in operator.get(url).content.decode()
    operator.post(url, {"active": "0", "deployment": str(platform.deployment.pk)})
    refused = platform.launch()
    assert refused.status_code == 403 and b"deployment (deployment-1) is not activated" in refused.content
    operator.post(url, {"active": "1", "deployment": str(platform.deployment.pk)})
    operator.post(url, {"active": "0"})
    refused = Client().get("/lti/login/", {"iss": platform.base, "login_hint": "u-1", "client_id": platform.client_id,
                                           "target_link_uri": LAUNCH_URL, "lti_cookies_checked": "1"})
    assert refused.status_code == 403 and b"not activated yet" in refused.content
    operator.post(url, {"active": "1"})
    assert platform.launch(context_id="ctx-9", custom={"assignment": "positive-gradient"}).status_code == 302


@pytest.fixture
def test_lms() -> Iterator[LmsPlatform]:
    platform = LmsPlatform(tool_base="http://testserver").start()
    yield platform
    platform.stop()


def _registration_url(operator: Client) -> str:
    page = operator.get("/lti/platforms/").content.decode()
    found = re.search(r'id="registration-url">([^<]+)<', page)
    assert found is not None
    return urlsplit(found.group(1)).path


@override_settings(LTI_ALLOW_HTTP=True)
@pytest.mark.django_db
def test_dynamic_registration_stores_the_platform_inactive_until_an_operator_activates_it(
        operator: Client, test_lms: LmsPlatform) -> None:
    start = test_lms.dynamic.start_url("http://testserver" + _registration_url(operator))
    done = Client().get(start)  # as the LMS opens it: no login
    assert done.status_code == 200, done.content[:500]
    assert b"not active yet" in done.content and b"data-lti-close" in done.content
    assert f"frame-ancestors 'self' {test_lms.base}" in done["Content-Security-Policy"]
    [sent] = test_lms.dynamic.accepted
    assert sent["initiate_login_uri"] == "http://testserver/lti/login/"
    assert sent["redirect_uris"] == ["http://testserver/lti/launch/"]
    assert sent["https://purl.imsglobal.org/spec/lti-tool-configuration"]["target_link_uri"].endswith("/lti/launch/")
    registration = LtiRegistration.objects.get(issuer=test_lms.base, client_id=test_lms.client_id)
    assert not registration.is_active and registration.auth_url == test_lms.url("/auth")
    assert LtiDeployment.objects.get(registration=registration).deployment_id == DEPLOYMENT
    assert Client().get(start).status_code == 403  # the URL has registered its platform
    registration.is_active = True
    registration.save()
    again = Client().get(test_lms.dynamic.start_url("http://testserver" + _registration_url(operator)))
    assert again.status_code == 400 and b"registered already" in again.content  # never changed by a new run
    assert LtiRegistration.objects.get(pk=registration.pk).is_active


@override_settings(LTI_ALLOW_HTTP=True)
@pytest.mark.django_db
def test_a_registration_url_registers_one_platform_and_a_failed_try_does_not_use_it_up(
        operator: Client, test_lms: LmsPlatform) -> None:
    """Whoever sees the URL after the administrator used it (a browser history, a shared screen) cannot
    register a platform of their own with it; a try the LMS's answer spoiled leaves it usable."""
    url = _registration_url(operator)
    assert _registration_url(operator) != url  # two issued in the same second are two URLs
    spoiled = Client().get(url, {"openid_configuration": test_lms.url("/nothing-here")})
    assert spoiled.status_code == 400 and b"answered 404" in spoiled.content
    done = Client().get(test_lms.dynamic.start_url("http://testserver" + url))
    assert done.status_code == 200 and b"not active yet" in done.content, done.content[:500]
    LtiRegistration.objects.filter(issuer=test_lms.base).delete()  # even with that platform gone
    reused = Client().get(test_lms.dynamic.start_url("http://testserver" + url))
    assert reused.status_code == 403 and b"has been used already" in reused.content
    assert len(test_lms.dynamic.accepted) == 1  # the LMS was not asked to register the tool again
    assert not LtiRegistration.objects.filter(issuer=test_lms.base).exists()


@override_settings(LTI_ALLOW_HTTP=True)
@pytest.mark.django_db
def test_a_registration_cut_off_midway_holds_its_url_a_few_minutes_then_lets_it_go(
        operator: Client, test_lms: LmsPlatform) -> None:
    """A registration whose process was killed between claiming the URL and finishing (no give-back ran)
    must not make the URL unusable for good."""
    url = _registration_url(operator)
    token = url.rstrip("/").rsplit("/", 1)[1]
    claim = UsedRegistrationUrl.objects.create(digest=hashlib.sha256(token.encode()).hexdigest(),
                                               used_at=timezone.now())
    busy = Client().get(test_lms.dynamic.start_url("http://testserver" + url))
    assert busy.status_code == 403 and b"under way" in busy.content and not test_lms.dynamic.accepted
    UsedRegistrationUrl.objects.filter(pk=claim.pk).update(used_at=timezone.now() - timedelta(minutes=6))
    done = Client().get(test_lms.dynamic.start_url("http://testserver" + url))
    assert done.status_code == 200 and b"not active yet" in done.content, done.content[:500]
    assert UsedRegistrationUrl.objects.get(pk=claim.pk).registered


@override_settings(LTI_ALLOW_HTTP=True)
@pytest.mark.django_db
def test_a_configuration_url_that_is_not_a_url_is_refused_readably(operator: Client) -> None:
    refused = Client().get(_registration_url(operator), {"openid_configuration": "http://[::1/x"})
    assert refused.status_code == 400 and b"is not an http(s) URL" in refused.content


@override_settings(LTI_ALLOW_HTTP=True)
@pytest.mark.django_db
def test_a_canvas_whose_shared_issuer_is_not_on_the_schools_host_registers_with_that_host_as_its_origin(
        operator: Client, test_lms: LmsPlatform) -> None:
    """Canvas's issuer is https://canvas.instructure.com for every school, while the school's own host
    serves the configuration, frames the tool and serves grades: that host becomes the platform's
    frame origin, shown to the operator, and the platform waits inactive like any other."""
    start = test_lms.dynamic.start_url("http://testserver" + _registration_url(operator),
                                       configuration=CANVAS_CONFIGURATION)
    done = Client().get(start)
    assert done.status_code == 200 and b"not active yet" in done.content, done.content[:500]
    registration = LtiRegistration.objects.get(issuer=CANVAS_ISSUER, client_id=test_lms.client_id)
    assert not registration.is_active and urlsplit(test_lms.base).hostname in registration.name
    assert [o.origin for o in FrameOrigin.objects.filter(registration=registration)] == [test_lms.base]
    assert test_lms.base in operator.get(f"/lti/platforms/{registration.pk}/").content.decode()


@override_settings(LTI_ALLOW_HTTP=True)
@pytest.mark.django_db
def test_dynamic_registration_refusals_are_readable_and_store_nothing(
        operator: Client, test_lms: LmsPlatform) -> None:
    good = _registration_url(operator)
    forged = Client().get(good[:-6] + "xxxxx/", {"openid_configuration": test_lms.url("/.well-known/openid-"
                                                                                       "configuration")})
    assert forged.status_code == 403 and b"not valid or has expired" in forged.content
    missing = Client().get(good)
    assert missing.status_code == 400 and b"openid_configuration is missing" in missing.content
    elsewhere = Client().get(good, {"openid_configuration": test_lms.url("/nothing-here")})
    assert elsewhere.status_code == 400 and b"answered 404" in elsewhere.content
    with override_settings(LTI_ALLOW_HTTP=False):
        plain = Client().get(good, {"openid_configuration": test_lms.url("/.well-known/openid-configuration")})
    assert plain.status_code == 400 and b"not https://" in plain.content
    other_host = test_lms.url("/.well-known/openid-configuration").replace("127.0.0.1", "localhost")
    moved = Client().get(good, {"openid_configuration": other_host, "registration_token": "t"})
    assert moved.status_code == 400 and b"issuer is not on the host" in moved.content
    assert not LtiRegistration.objects.filter(issuer=test_lms.base).exists()
    assert not test_lms.dynamic.accepted
    get_user_model().objects.filter(is_staff=True).update(is_staff=False)  # its issuer is no operator any more
    revoked = Client().get(good, {"openid_configuration": test_lms.url("/.well-known/openid-configuration")})
    assert revoked.status_code == 403 and b"not valid or has expired" in revoked.content


@pytest.mark.django_db
def test_a_browser_opening_the_launch_or_login_url_gets_a_readable_page() -> None:
    launch = Client().get("/lti/launch/")
    assert launch.status_code == 405 and b"launch URL" in launch.content and launch["Allow"] == "POST"
    login = Client().get("/lti/login/")
    assert login.status_code == 400 and b"login (OIDC initiation) URL" in login.content
    missing = Client().get("/lti/login/", {"iss": "https://lms.example", "login_hint": "u"})
    assert missing.status_code == 400 and b"missing target_link_uri" in missing.content


@pytest.mark.django_db
def test_the_setup_page_names_the_lms_fields_says_https_and_lists_registrations_to_operators(
        operator: Client) -> None:
    Platform().register()
    anyone = Client().get("/lti/setup/").content.decode()
    for field in ("“Tool URL”", "“Initiate login URL”", "“Redirection URI(s)”", "“Public keyset URL”",
                  "“OpenID Connect Initiation Url”", "“Target Link URI”", "“Public JWK URL”"):
        assert field in anyone
    assert "must be served over HTTPS with secure cookies" in anyone and "docs/operations.md" in anyone
    assert "Open in a new window" in anyone
    assert '<pre class="wrap">python manage.py lti_register' in anyone  # the command box wraps, not clipped
    assert "In-process LMS" not in anyone  # registrations are for operators' eyes
    assert "In-process LMS" in operator.get("/lti/setup/").content.decode()


@pytest.mark.django_db
def test_a_deployment_the_operator_has_not_seen_waits_inactive_for_them(operator: Client) -> None:
    platform = Platform().register()
    platform.deployment_id = "added-later-in-the-lms"
    refused = platform.launch()
    assert refused.status_code == 403 and b"(added-later-in-the-lms) is not activated" in refused.content
    waiting = LtiDeployment.objects.get(deployment_id="added-later-in-the-lms")
    assert not waiting.is_active
    registration = waiting.registration
    page = operator.get(f"/lti/platforms/{registration.pk}/").content.decode()
    assert "added-later-in-the-lms" in page and "Activate deployment" in page
    operator.post(f"/lti/platforms/{registration.pk}/", {"active": "1", "deployment": str(waiting.pk)})
    opened = platform.launch(instructor=True)  # its LMS course gets a course of its own, its link a pick
    assert opened.status_code == 302 and opened["Location"] == "/lti/bind/"
    for number in range(30):  # a platform cannot fill the table with deployments
        platform.deployment_id = f"flood-{number}"
        platform.launch()
    assert LtiDeployment.objects.filter(registration=registration, is_active=False).count() == 20


@pytest.mark.django_db
def test_operators_find_the_platforms_page_from_the_staff_home(operator: Client, instructor: Any) -> None:
    assert 'href="/lti/platforms/"' in operator.get("/staff/").content.decode()
    teacher = Client()
    teacher.force_login(instructor.user)
    assert 'href="/lti/platforms/"' not in teacher.get("/staff/").content.decode()


@pytest.mark.django_db
def test_a_launch_posted_after_its_platform_was_deactivated_is_refused_in_words() -> None:
    platform, client = Platform().register(), Client()
    state, nonce = platform.login(client)
    LtiRegistration.objects.filter(issuer=platform.base).update(is_active=False)
    refused = platform.post(client, state=state, header=platform.header(), body=platform.body(nonce=nonce))
    assert refused.status_code == 403 and b"not activated yet" in refused.content


def test_dynamic_registration_reads_within_one_deadline_and_calls_nothing_inside_the_network() -> None:
    """A platform that drips its answer holds a web process no longer than the tool's timeout; a
    configuration URL on a loopback or private address is not called at all outside development."""
    import socket
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from lti.dynamic_registration import _inside_address, _json_from
    from lti.platform_client import PlatformError

    class Drip(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            try:
                for _ in range(40):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.1)
            except OSError:
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with override_settings(LTI_ALLOW_HTTP=True, LTI_HTTP_TIMEOUT=1.0):
            started = time.monotonic()
            with pytest.raises(PlatformError, match="did not finish answering"):
                _json_from("GET", f"http://127.0.0.1:{server.server_port}/config", what="the configuration")
            assert time.monotonic() - started < 2.5
        with override_settings(LTI_ALLOW_HTTP=False):
            with pytest.raises(PlatformError, match="inside this network"):
                _json_from("GET", f"https://127.0.0.1:{server.server_port}/config", what="the configuration")
    finally:
        server.shutdown()
    assert _inside_address("https://10.1.2.3/x") and _inside_address("https://localhost/x")
    assert not _inside_address("https://8.8.8.8/x") or socket.gethostname() == ""


@pytest.mark.django_db
def test_editing_a_platform_onto_another_platforms_issuer_and_client_id_is_refused_beside_the_field(
        operator: Client) -> None:
    operator.post("/lti/platforms/", FORM)
    other = {**FORM, "client_id": "other-client", "deployment_id": "8"}
    operator.post("/lti/platforms/", other)
    moved = LtiRegistration.objects.get(client_id="other-client")
    refused = operator.post(f"/lti/platforms/{moved.pk}/", {**other, "client_id": FORM["client_id"]})
    assert refused.status_code == 400
    assert "another registration has this issuer and client id" in refused.content.decode()
    moved.refresh_from_db()
    assert moved.client_id == "other-client"
