"""The LTI findings of the third red-team pass, each reproduced in the test process (no servers but a
loopback stand-in for the platform's services): LMS course takeover, who may create courses, `--course`
bindings, calls to hosts a launch names, key-set refetches, scores per LMS course, roster removals."""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from lti_tool.models import LtiContext, LtiMembership, LtiRegistration, LtiResourceLink, LtiUser
from pylti1p3.exception import LtiException

from assignments.models import Assignment, Course, Membership
from assignments.services import course_demo, membership_set
from authoring import publishing
from lti import nrps_sync
from lti.models import ContextCourse, LinkAssignment
from lti.nrps_sync import roster_sync
from lti.platform_client import PlatformError, access_token
from lti.scores import _links_of
from lti.validation import TimedSession, platform_jwks
from tests.clients import logged_in
from tests.lti_platform.inprocess import Platform

pytestmark = pytest.mark.django_db
User = get_user_model()


def lms_user(platform: Platform, sub: str) -> Any:
    return LtiUser.objects.get(registration__issuer=platform.base, sub=sub).auth_user


# --- LMS course takeover --------------------------------------------------------------------------------


@override_settings(GRADER_COURSE_CREATORS="instructors")  # the old rule, so the instructor can pre-create
def test_an_instructor_who_made_the_old_derived_slug_first_does_not_receive_the_lms_course(instructor: Any) -> None:
    platform = Platform().register()
    old_slug = f"ag101-{hashlib.sha256(f'{platform.deployment.pk}:ctx-1'.encode()).hexdigest()[:8]}"
    made = logged_in(instructor).post("/staff/courses/new/", {"slug": old_slug, "title": "Mine"})
    assert made.status_code == 302
    trap = Course.objects.get(slug=old_slug)

    assert platform.launch(user_id="prof", instructor=True).status_code == 302  # to the page binding the link
    assert platform.launch(user_id="co-prof", instructor=True).status_code == 302
    assert not trap.memberships.filter(user__lti_users__registration__issuer=platform.base).exists()
    mapped = ContextCourse.objects.get(context__deployment=platform.deployment, context__id_on_platform="ctx-1")
    assert mapped.course != trap and mapped.course.slug.startswith("ag101-") and mapped.course.slug != old_slug
    roles = dict(mapped.course.memberships.values_list("user__lti_users__sub", "role"))
    assert roles == {"prof": "instructor", "co-prof": "instructor"}
    assert set(trap.memberships.values_list("user_id", flat=True)) == {instructor.user.pk}


def test_a_launch_finds_its_course_only_through_the_mapping() -> None:
    platform = Platform().register()
    assert platform.launch(user_id="ada", instructor=True).status_code == 302
    course = ContextCourse.objects.get(context__deployment=platform.deployment).course
    Course.objects.filter(pk=course.pk).update(slug="renamed-by-an-operator")
    assert platform.launch(user_id="bob", instructor=True).status_code == 302
    assert Course.objects.get(slug="renamed-by-an-operator").memberships.count() == 2
    assert ContextCourse.objects.filter(context__deployment=platform.deployment).count() == 1


def test_only_operators_and_the_users_they_name_create_courses_by_default(instructor: Any) -> None:
    client = logged_in(instructor)
    assert client.get("/staff/courses/new/").status_code == 403
    refused = client.post("/staff/courses/new/", {"slug": "squatted", "title": "Squat"})
    assert refused.status_code == 403 and b"operators" in refused.content
    assert not Course.objects.filter(slug="squatted").exists()
    assert b"/staff/courses/new/" not in client.get("/staff/").content
    with pytest.raises(PermissionDenied):
        publishing.course_create(user=instructor.user, slug="squatted", title="Squat")

    with override_settings(GRADER_COURSE_CREATOR_USERS=(instructor.user.username,)):
        assert b"/staff/courses/new/" in client.get("/staff/").content
        assert client.post("/staff/courses/new/", {"slug": "named-one", "title": "Named"}).status_code == 302
    operator = User.objects.create_user(username=f"op-{uuid.uuid4().hex[:6]}", password="pw-operator", is_staff=True)
    operator_client = Client()
    operator_client.force_login(operator)
    assert operator_client.post("/staff/courses/new/", {"slug": "by-operator", "title": "Op"}).status_code == 302
    with override_settings(GRADER_COURSE_CREATORS="instructors"):
        assert client.post("/staff/courses/new/", {"slug": "old-rule", "title": "Old"}).status_code == 302
    assert Course.objects.filter(slug__in=["named-one", "by-operator", "old-rule"]).count() == 3


# --- --course binds only the contexts it names ----------------------------------------------------------


def test_a_course_binding_applies_only_to_the_lms_courses_it_names() -> None:
    demo = course_demo()
    platform = Platform().register(course=demo.slug, contexts=("bound-ctx",))
    assert platform.launch(user_id="prof-a", instructor=True, context_id="bound-ctx").status_code == 302
    assert Membership.objects.get(user=lms_user(platform, "prof-a"), course=demo).role == "instructor"

    other = platform.launch(user_id="prof-b", instructor=True, context_id="other-ctx", label="OTHER")
    assert other.status_code == 302
    stranger = lms_user(platform, "prof-b")
    assert not Membership.objects.filter(user=stranger, course=demo).exists()
    own = ContextCourse.objects.get(context__deployment=platform.deployment, context__id_on_platform="other-ctx")
    assert own.course != demo and Membership.objects.get(user=stranger, course=own.course).role == "instructor"


def test_lti_register_refuses_a_course_without_the_contexts_it_is_for() -> None:
    args = ["--name", "X", "--issuer", "https://x.example", "--client-id", "c", "--auth-url", "https://x.example/a",
            "--token-url", "https://x.example/t", "--keyset-url", "https://x.example/k", "--deployment", "d"]
    with pytest.raises(CommandError, match="--context"):
        call_command("lti_register", *args, "--course", course_demo().slug, stdout=StringIO())
    with pytest.raises(CommandError, match="--service-host"):
        call_command("lti_register", *args, "--service-host", "https://x.example/path", stdout=StringIO())


# --- calls to the platform: registered hosts only, no foreign redirects, no reply bodies shown ----------


class _Service(BaseHTTPRequestHandler):
    """A platform's token and roster services; `routes` says what each path answers."""

    routes: dict[str, tuple[int, dict[str, str], bytes]] = {}
    hits: list[str] = []

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer()

    def _answer(self) -> None:
        port = self.server.server_address[1]
        type(self).hits.append(f"{port}{self.path}")
        status, headers, body = type(self).routes.get(f"{port}{self.path.split('?')[0]}", (404, {}, b"{}"))
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _serve() -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Service)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def services() -> Iterator[tuple[str, str]]:
    """Two loopback servers: the platform's (registered) and another host's (never registered)."""
    _Service.routes, _Service.hits = {}, []
    ours, ours_url = _serve()
    theirs, theirs_url = _serve()
    yield ours_url, theirs_url
    for server in (ours, theirs):
        server.shutdown()
        server.server_close()


def route(url: str, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    port_path = url.split("://", 1)[1].split(":", 1)[1]
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    _Service.routes[port_path] = (status, {"Content-Type": "application/json", **(headers or {})}, data)


def hits_at(base: str) -> list[str]:
    port = base.rsplit(":", 1)[1]
    return [hit for hit in _Service.hits if hit.startswith(port)]


def roster_of(platform: Platform, memberships_url: str, **launch: Any) -> ContextCourse:
    """An instructor's launch naming this roster URL; returns the mapping whose roster sync reads it."""
    launched = platform.launch(user_id="prof", instructor=True, memberships_url=memberships_url, **launch)
    assert launched.status_code == 302
    return ContextCourse.objects.get(context__deployment=platform.deployment, context__id_on_platform="ctx-1")


def token_ok(base: str) -> None:
    route(f"{base}/token", 200, {"access_token": f"t-{uuid.uuid4().hex}", "expires_in": 3600})


@override_settings(LTI_ALLOW_HTTP=True)
def test_a_roster_url_on_a_host_not_registered_for_the_platform_is_never_called(services: tuple[str, str]) -> None:
    ours, theirs = services
    token_ok(ours)
    route(f"{theirs}/internal/admin", 200, {"members": [], "secret": "INTERNAL-REPLY"})
    platform = Platform(base=ours).register()
    row = roster_of(platform, f"{theirs}/internal/admin")
    with pytest.raises(PlatformError, match="not a host registered"):
        roster_sync(context_course_id=row.id)
    assert hits_at(theirs) == [] and hits_at(ours) == []  # not even a token was asked for it
    assert "lti_register --service-host" in ContextCourse.objects.get(id=row.id).roster_error


@override_settings(LTI_ALLOW_HTTP=True)
def test_an_extra_service_host_registered_for_the_platform_is_called(services: tuple[str, str]) -> None:
    ours, theirs = services
    token_ok(ours)
    route(f"{theirs}/roster", 200, {"members": [{"user_id": "prof", "roles": ["Instructor"]}]})
    platform = Platform(base=ours).register(service_hosts=(theirs.split("://")[1],))
    row = roster_of(platform, f"{theirs}/roster")
    assert roster_sync(context_course_id=row.id) == 1
    assert hits_at(theirs) == [f"{theirs.rsplit(':', 1)[1]}/roster"]


@override_settings(LTI_ALLOW_HTTP=True)
def test_a_deactivated_platform_is_never_called(services: tuple[str, str]) -> None:
    ours, _ = services
    token_ok(ours)
    route(f"{ours}/roster", 200, {"members": []})
    platform = Platform(base=ours).register()
    row = roster_of(platform, f"{ours}/roster")
    LtiRegistration.objects.filter(pk=platform.deployment.registration_id).update(is_active=False)
    with pytest.raises(PlatformError, match="deactivated"):
        roster_sync(context_course_id=row.id)
    assert hits_at(ours) == []


def test_plain_http_is_refused_in_production(services: tuple[str, str]) -> None:
    ours, _ = services
    token_ok(ours)
    platform = Platform(base=ours).register()
    with override_settings(LTI_ALLOW_HTTP=True):
        row = roster_of(platform, f"{ours}/roster")
    with pytest.raises(PlatformError, match="not https"):
        roster_sync(context_course_id=row.id)
    assert hits_at(ours) == []


@override_settings(LTI_ALLOW_HTTP=True)
def test_a_redirect_to_another_host_is_not_followed(services: tuple[str, str]) -> None:
    ours, theirs = services
    token_ok(ours)
    route(f"{ours}/roster", 302, b"", {"Location": f"{theirs}/internal"})
    platform = Platform(base=ours).register()
    row = roster_of(platform, f"{ours}/roster")
    with pytest.raises(PlatformError, match="answered 302: a redirect to another address, not followed"):
        roster_sync(context_course_id=row.id)
    assert hits_at(theirs) == []
    route(f"{ours}/roster", 302, b"", {"Location": "/roster-moved"})  # on the same host: followed
    route(f"{ours}/roster-moved", 200, {"members": [{"user_id": "prof", "roles": ["Instructor"]}]})
    assert roster_sync(context_course_id=row.id) == 1


@override_settings(LTI_ALLOW_HTTP=True)
def test_instructors_see_a_status_and_a_reason_never_the_reply(services: tuple[str, str], instructor: Any) -> None:
    ours, _ = services
    token_ok(ours)
    route(f"{ours}/roster", 500, b"<html>INTERNAL-STACK-TRACE db=10.0.0.7</html>")
    platform = Platform(base=ours).register(course=course_demo().slug, contexts=("ctx-1",))
    row = roster_of(platform, f"{ours}/roster")
    with pytest.raises(PlatformError):
        roster_sync(context_course_id=row.id)
    error = ContextCourse.objects.get(id=row.id).roster_error
    assert error == "the LMS's roster service answered 500: the LMS had an error of its own"
    page = logged_in(instructor).get(f"/lti/courses/{course_demo().slug}/").content.decode()
    assert "answered 500" in page and "INTERNAL-STACK-TRACE" not in page

    route(f"{ours}/token", 400, b'{"error": "invalid_client", "detail": "TOKEN-SERVER-SECRET"}')
    with pytest.raises(PlatformError) as refused:
        access_token(registration=platform.deployment.registration, scopes=["x"], fresh=True)
    assert str(refused.value) == "the LMS's token service answered 400: the LMS found the request malformed"


# --- key sets: refetches rate-limited, no URL on the refusal page ---------------------------------------


@override_settings(LTI_JWKS_REFETCH_SECONDS=60)
def test_forged_launches_cannot_make_the_tool_fetch_key_sets_on_every_request(services: tuple[str, str]) -> None:
    ours, _ = services
    route(f"{ours}/jwks", 500, b"KEYSET-BODY")
    platform = Platform(base=ours).register()
    caches["lti"].delete("jwks-" + hashlib.sha256(f"{ours}/jwks".encode()).hexdigest())
    for _ in range(5):  # unsigned launches naming an unknown key, each after its own login
        client = Client()
        state, nonce = platform.login(client)
        page = platform.post(client, state=state, header={**platform.header(), "kid": uuid.uuid4().hex},
                             body=platform.body(nonce=nonce), signed=False)
        assert 400 <= page.status_code < 500 and b"key set could not be fetched" in page.content
        assert ours.encode() not in page.content and b"KEYSET-BODY" not in page.content
    assert len(hits_at(ours)) == 1  # one fetch for the five, not two per request


@override_settings(LTI_JWKS_REFETCH_SECONDS=60)
def test_a_key_set_is_refetched_once_per_period_for_an_unknown_kid(services: tuple[str, str]) -> None:
    ours, _ = services
    route(f"{ours}/jwks", 200, {"keys": []})
    url = f"{ours}/jwks-{uuid.uuid4().hex}"
    route(url, 200, {"keys": []})
    assert platform_jwks(url=url, session=TimedSession()) == {"keys": []}
    for _ in range(3):
        assert platform_jwks(url=url, session=TimedSession(), fresh=True) == {"keys": []}
    assert len([hit for hit in hits_at(ours) if "jwks-" in hit]) == 1
    with pytest.raises(LtiException) as failed:
        platform_jwks(url=f"{ours}/missing-{uuid.uuid4().hex}", session=TimedSession())
    assert ours not in str(failed.value)


# --- scores go only to the student's own LMS course ------------------------------------------------------


def test_a_score_goes_only_to_the_columns_of_the_students_own_lms_course() -> None:
    demo = course_demo()
    platform = Platform().register(course=demo.slug, contexts=("course-a", "course-b"))
    slug = "positive-gradient"
    for context_id in ("course-a", "course-b"):  # each LMS course links the assignment to a column of its own
        assert platform.launch(user_id=f"prof-{context_id}", instructor=True, context_id=context_id,
                               resource_link_id=f"link-{context_id}", custom={"assignment": slug},
                               line_item=f"{platform.base}/{context_id}/lineitems/1").status_code == 302
    assert platform.launch(user_id="ada", context_id="course-a", resource_link_id="link-course-a").status_code == 302
    ada = lms_user(platform, "ada")
    links = _links_of(user_id=ada.pk, assignment=Assignment.objects.get(slug=slug))
    assert [link.resource_link.context.id_on_platform for link, _sub in links] == ["course-a"]
    assert LinkAssignment.objects.filter(assignment__slug=slug, resource_link__context__deployment=platform.deployment
                                         ).count() == 2


# --- a complete roster listing removes the members it no longer lists -----------------------------------


@override_settings(LTI_ALLOW_HTTP=True)
def test_a_complete_roster_removes_who_it_no_longer_lists_but_not_staff_added_by_hand(
        services: tuple[str, str], instructor: Any) -> None:
    ours, _ = services
    token_ok(ours)
    platform = Platform(base=ours).register()
    row = roster_of(platform, f"{ours}/roster")
    course = row.course
    membership_set(user=instructor.user, course=course, role="ta")  # added by hand, not from the LMS

    def pages(*subs: str) -> None:  # two members a page, linked by `next`
        chunks = [subs[i:i + 2] for i in range(0, len(subs), 2)] or [()]
        for number, chunk in enumerate(chunks):
            following = {"Link": f'<{ours}/roster-{number + 1}>; rel="next"'} if number + 1 < len(chunks) else {}
            route(f"{ours}/roster" + (f"-{number}" if number else ""), 200,
                  {"members": [{"user_id": sub, "roles": ["Learner"] if sub != "prof" else ["Instructor"]}
                               for sub in chunk]}, following)

    pages("prof", "ada", "bob", "cy", "dee")
    assert roster_sync(context_course_id=row.id) == 5
    members = set(course.memberships.values_list("user__lti_users__sub", flat=True))
    assert {"prof", "ada", "bob", "cy", "dee"} <= members

    pages("prof", "ada", "cy", "dee")  # bob left the LMS course: the platform just stops listing him
    assert roster_sync(context_course_id=row.id) == 4
    assert not course.memberships.filter(user__lti_users__sub="bob").exists()
    assert not LtiMembership.objects.get(user__sub="bob", context=row.context).is_active
    assert course.memberships.filter(user=instructor.user, role="ta").exists()

    pages("prof", "ada", "cy")  # a listing cut short (more pages than the tool reads) removes nobody
    with mock.patch.object(nrps_sync, "MAX_PAGES", 1):
        roster_sync(context_course_id=row.id)
    assert "nobody was removed" in ContextCourse.objects.get(id=row.id).roster_error
    assert course.memberships.filter(user__lti_users__sub__in=["cy", "dee"]).count() == 2


def test_a_resource_link_of_another_context_is_kept_apart() -> None:
    """The fixture's launches build the rows the score test relies on: one resource link per LMS course."""
    platform = Platform().register()
    for context_id in ("c1", "c2"):
        launched = platform.launch(user_id="ada", instructor=True, context_id=context_id, resource_link_id="same-id")
        assert launched.status_code == 302
    assert LtiResourceLink.objects.filter(context__deployment=platform.deployment).count() == 2
    assert LtiContext.objects.filter(deployment=platform.deployment).count() == 2
