"""id_tokens of every JSON shape, posted with a real login's state: a readable 4xx page, never a 500.

A body that was a JSON list, a header that was a list or a nonce that was an object made PyLTI1p3 raise
before the signature was checked, so any client that starts a login could cause a 500. The examples
below are the red team's; the property-based test puts a value of the wrong JSON type into each place
of the token, signed with the platform's key or not.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lti.views import UNREADABLE
from tests.lti_platform.inprocess import AGS, CLAIM, NRPS, Platform
from tests.lti_platform.launches import INSTRUCTOR

pytestmark = pytest.mark.django_db
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)
KINDS: dict[str, Any] = {
    "text": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "list": lambda v: isinstance(v, list),
}
# Where a value goes (a header field, a claim, a field of an object claim) and the JSON type it must have.
PLACES: list[tuple[tuple[str, ...], str]] = [
    (("header", "alg"), "text"), (("header", "kid"), "text"),
    *[(("body", claim), "text") for claim in ("iss", "sub", "nonce", "azp", "name", "email", "given_name",
                                                CLAIM + "deployment_id", CLAIM + "message_type", CLAIM + "version",
                                                CLAIM + "target_link_uri")],
    *[(("body", claim), "number") for claim in ("iat", "exp", "nbf")],
    *[(("body", claim), "object") for claim in (CLAIM + "context", CLAIM + "resource_link", CLAIM + "custom",
                                                  CLAIM + "tool_platform", AGS, NRPS, DL)],
    (("body", CLAIM + "roles"), "list"),
    (("body", CLAIM + "context", "id"), "text"), (("body", CLAIM + "context", "type"), "list"),
    (("body", CLAIM + "resource_link", "id"), "text"), (("body", AGS, "scope"), "list"),
    (("body", AGS, "lineitem"), "text"), (("body", NRPS, "context_memberships_url"), "text"),
]


@pytest.fixture
def platform() -> Platform:
    return Platform().register()


def token_parts(platform: Platform, client: Client) -> tuple[str, dict[str, Any], dict[str, Any]]:
    state, nonce = platform.login(client)
    body = platform.body(nonce=nonce, roles=(INSTRUCTOR,), line_item=f"{platform.base}/lineitems/1",
                         memberships_url=f"{platform.base}/memberships")  # good: to the page binding the link
    return state, platform.header(), body


def assert_refused_readably(response: Any) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    page = response.content.decode()
    assert "The LMS launch was refused" in page
    assert UNREADABLE not in page  # refused by the shape checks, not by the last-resort net


@pytest.mark.parametrize(("name", "change"), [
    ("a body that is a JSON list", lambda header, body: (header, [body])),
    ("a body that is a string", lambda header, body: (header, "body")),
    ("a header that is a list", lambda header, body: ([header], body)),
    ("a header that is a number", lambda header, body: (7, body)),
    ("a nonce that is an object", lambda header, body: (header, {**body, "nonce": {"a": 1}})),
    ("a nonce that is a list", lambda header, body: (header, {**body, "nonce": ["n"]})),
    ("an issuer that is an object", lambda header, body: (header, {**body, "iss": {"x": 1}})),
    ("an audience that is an empty list", lambda header, body: (header, {**body, "aud": []})),
    ("an alg that is a list", lambda header, body: ({**header, "alg": ["RS256"]}, body)),
    ("an NRPS claim without its URL", lambda header, body: (header, {**body, NRPS: {"service_versions": ["2.0"]}})),
    ("a context type that is a number", lambda header, body: (header, {**body, CLAIM + "context": {"id": "c",
                                                                                                   "type": 5}})),
    ("a deep-linking claim without its return URL", lambda header, body: (header, {
        **body, CLAIM + "message_type": "LtiDeepLinkingRequest", DL: {"accept_types": ["ltiResourceLink"]}})),
    ("an exp that is text", lambda header, body: (header, {**body, "exp": "tomorrow"})),
])
@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_a_malformed_id_token_is_a_readable_4xx(platform: Platform, name: str, change: Any, signed: bool) -> None:
    client = Client()
    state, header, body = token_parts(platform, client)
    header, body = change(header, body)
    assert_refused_readably(platform.post(client, state=state, header=header, body=body, signed=signed))


def test_the_well_formed_token_of_the_fuzz_gets_in(platform: Platform) -> None:
    client = Client()
    state, header, body = token_parts(platform, client)
    assert platform.post(client, state=state, header=header, body=body).status_code == 302


def _put(token: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    target = token[path[0]]
    for step in path[1:-1]:
        target = target.setdefault(step, {})
    target[path[-1]] = value


@st.composite
def misplaced(draw: st.DrawFn) -> tuple[tuple[str, ...], Any]:
    path, kind = draw(st.sampled_from(PLACES))
    value = draw(JSON.filter(lambda v: not KINDS[kind](v)))
    return path, value


@override_settings(LTI_HTTP_TIMEOUT=0.5)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(change=st.one_of(
    misplaced(),
    JSON.filter(lambda v: not isinstance(v, dict)).map(lambda v: (("header",), v)),
    JSON.filter(lambda v: not isinstance(v, dict)).map(lambda v: (("body",), v)),
), signed=st.booleans())
def test_any_id_token_with_a_value_of_the_wrong_json_type_is_a_readable_4xx(
        platform: Platform, change: tuple[tuple[str, ...], Any], signed: bool) -> None:
    client = Client()
    state, header, body = token_parts(platform, client)
    token = {"header": header, "body": body}
    path, value = change
    if len(path) == 1:
        token[path[0]] = value
    else:
        _put(token, path, value)
    assert_refused_readably(platform.post(client, state=state, header=token["header"], body=token["body"],
                                          signed=signed))
