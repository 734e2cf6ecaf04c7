"""Signed launches whose claims have the wrong type or length or hold a NUL:
each was a 500 from django-lti's sync (TypeError, AttributeError, PostgreSQL DataError); now the
readable refusal page names the claim, and nobody is logged in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lti.claim_shapes import claims_problem
from tests.lti_platform.browser import LmsBrowser
from tests.lti_platform.fixtures import platform_running
from tests.lti_platform.server import LmsPlatform
from tests.test_lti_security import CLAIM, assert_refused, spec

pytestmark = pytest.mark.integration
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"

MALFORMED = {
    "roles of numbers": ({CLAIM + "roles": [1, 2]}, "roles must be a list of texts"),
    "context a string": ({CLAIM + "context": "course-1"}, "context must be an object"),
    "context id 5,000 long": ({CLAIM + "context": {"id": "c" * 5_000}}, "field id is longer than 255"),
    "context title 5,000 long": ({CLAIM + "context": {"id": "c", "title": "T" * 5_000}}, "longer than 500"),
    "custom a list": ({CLAIM + "custom": ["a"]}, "custom must be an object"),
    "sub 5,000 long": ({"sub": "s" * 5_000}, "sub is longer than 255"),
    "a NUL in the name": ({"name": "Eve\x00"}, "NUL character"),
    "e-mail 5,000 long": ({"email": "e" * 5_000 + "@example.org"}, "email is longer than 254"),
    "resource link a string": ({CLAIM + "resource_link": "link"}, "resource_link must be an object"),
    "AGS claim a string": ({AGS: "https://lms.example/lineitems"}, "endpoint must be an object"),
}


@pytest.fixture(scope="module")
def lti_platform(web_server: str, django_db_blocker: Any) -> Iterator[LmsPlatform]:
    yield from platform_running(web_server=web_server, django_db_blocker=django_db_blocker)


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_signed_launch_with_a_malformed_claim_is_refused_by_name(live_db: None, lti_platform: LmsPlatform,
                                                                   name: str) -> None:
    claims, reason = MALFORMED[name]
    browser = LmsBrowser(lti_platform)
    assert_refused(browser, browser.launch(spec(claims=claims)).response, reason=reason)


def test_well_formed_claims_pass_the_shape_check() -> None:
    body = {"sub": "u-1", "name": "Eve Student", "email": "eve@example.org", CLAIM + "roles": [],
            CLAIM + "context": {"id": "course-1", "title": "Autograd 101"}, CLAIM + "custom": {"assignment": 5},
            CLAIM + "resource_link": {"id": "link-1"}, AGS: {"scope": [], "lineitem": "https://lms.example/li/1"}}
    assert claims_problem(body) is None


WRONG_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.one_of(
    WRONG_JSON.filter(lambda v: not isinstance(v, dict)).map(lambda v: {"whole_body": v}),
    WRONG_JSON.filter(lambda v: not isinstance(v, dict)).map(lambda v: {"whole_header": v}),
    WRONG_JSON.filter(lambda v: not isinstance(v, str)).map(lambda v: {"claims": {"nonce": v}}),
    WRONG_JSON.filter(lambda v: not isinstance(v, dict)).map(lambda v: {"claims": {CLAIM + "context": v}}),
    WRONG_JSON.filter(lambda v: not isinstance(v, str | list)).map(lambda v: {"claims": {"aud": v}}),
))
def test_an_id_token_of_any_json_shape_from_the_test_platform_is_a_readable_4xx(
        live_db: None, lti_platform: LmsPlatform, shape: dict[str, Any]) -> None:
    browser = LmsBrowser(lti_platform)
    response = browser.launch(spec(**shape)).response
    assert 400 <= response.status_code < 500, (shape, response.status_code, response.text[:300])
    assert "refused" in response.text and "could not be read" not in response.text
