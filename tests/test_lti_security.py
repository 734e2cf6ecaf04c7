"""Every launch the issue lists as an attack is refused with a 4xx page, never a 500, and logs nobody in."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from lti_tool.models import LtiDeployment, LtiRegistration

from tests.lti_platform.browser import LmsBrowser
from tests.lti_platform.fixtures import platform_running
from tests.lti_platform.launches import DROP, LEARNER, LaunchSpec, Member
from tests.lti_platform.server import LmsPlatform

pytestmark = pytest.mark.integration
CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
GOOD = {"assignment": "positive-gradient"}


@pytest.fixture(scope="module")
def lti_platform(web_server: str, django_db_blocker: Any) -> Iterator[LmsPlatform]:
    yield from platform_running(web_server=web_server, django_db_blocker=django_db_blocker)


def spec(**changes: Any) -> LaunchSpec:
    user = Member(user_id=f"user-{uuid.uuid4().hex[:10]}", name="Eve Student", roles=[LEARNER])
    return LaunchSpec(user=user, custom=GOOD, **changes)


def assert_refused(browser: LmsBrowser, response: requests.Response, *, reason: str) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:500])
    assert "refused" in response.text and reason.lower() in response.text.lower()
    home = browser.session.get(browser.platform.registration.get_launch_url().replace("/lti/launch/", "/"),
                               allow_redirects=False, timeout=10)
    assert home.status_code == 302 and "/accounts/login/" in home.headers["Location"]  # nobody logged in


def test_a_good_launch_gets_in(live_db: None, lti_platform: LmsPlatform) -> None:
    """The baseline the refusals below differ from by one thing each."""
    launched = LmsBrowser(lti_platform).launch(spec())
    assert launched.response.status_code == 302 and launched.response.headers["Location"].startswith("/assignments/")


@pytest.mark.parametrize(("changes", "reason"), [
    ({"sign_with": "stranger"}, "signature"),
    ({"header": {"kid": "not-a-platform-key"}}, "public key"),
    ({"sign_with": "none"}, "RS256"),
    ({"sign_with": "hs256"}, "RS256"),
    ({"claims": {"iss": "https://evil.example"}}, "registration"),
    ({"claims": {"aud": "someone-elses-client"}}, "registration"),
    ({"claims": {CLAIM + "deployment_id": "never-registered"}}, "deployment"),
    ({"clock_offset": -400}, "expired"),
    ({"clock_offset": 30}, "not yet valid"),
    ({"claims": {"nonce": DROP}}, "nonce"),
    ({"claims": {"nonce": "forged-nonce"}}, "nonce"),
    ({"claims": {CLAIM + "message_type": "LtiSomethingElse"}}, "message type"),
    ({"claims": {CLAIM + "version": "1.1"}}, "version"),
    ({"claims": {"sub": DROP}}, "sub"),
    ({"claims": {CLAIM + "resource_link": DROP}}, "resource link"),
    ({"claims": {CLAIM + "target_link_uri": "https://evil.example/lti/launch/"}}, "target_link_uri"),
], ids=["bad-signature", "unknown-kid", "alg-none", "alg-hs256", "wrong-iss", "wrong-aud", "unknown-deployment",
        "expired", "iat-30s-ahead", "missing-nonce", "forged-nonce", "wrong-message-type", "wrong-version",
        "missing-sub", "missing-resource-link", "target-elsewhere"])
def test_a_tampered_launch_is_refused(live_db: None, lti_platform: LmsPlatform, changes: dict[str, Any],
                                      reason: str) -> None:
    browser = LmsBrowser(lti_platform)
    assert_refused(browser, browser.launch(spec(**changes)).response, reason=reason)


def test_a_platform_clock_5s_ahead_is_accepted(live_db: None, lti_platform: LmsPlatform) -> None:
    launched = LmsBrowser(lti_platform).launch(spec(clock_offset=5))
    assert launched.response.status_code == 302


def test_an_inactive_deployment_is_refused(live_db: None, lti_platform: LmsPlatform) -> None:
    registration = LtiRegistration.objects.get(issuer=lti_platform.base, client_id=lti_platform.client_id)
    LtiDeployment.objects.get_or_create(registration=registration, deployment_id="paused", is_active=False)
    browser = LmsBrowser(lti_platform)
    launched = browser.launch(spec(claims={CLAIM + "deployment_id": "paused"}))
    assert_refused(browser, launched.response, reason="not activated")


def test_a_replayed_id_token_is_refused_in_the_same_browser_and_without_cookies(
        live_db: None, lti_platform: LmsPlatform) -> None:
    browser = LmsBrowser(lti_platform)
    first = browser.launch(spec())
    assert first.response.status_code == 302
    again = browser.post_launch(first.action, id_token=first.id_token, state=first.state)
    assert again.status_code == 403 and "already used" in again.text
    cookieless = LmsBrowser(lti_platform)
    replayed = cookieless.post_launch(first.action, id_token=first.id_token, state=first.state)
    assert_refused(cookieless, replayed, reason="already used")


def test_a_missing_or_foreign_state_is_refused(live_db: None, lti_platform: LmsPlatform) -> None:
    browser = LmsBrowser(lti_platform)
    signed = browser.signed(spec())
    assert not isinstance(signed, requests.Response)
    action, id_token, _state = signed
    assert_refused(browser, browser.session.post(action, data={"id_token": id_token}, timeout=10), reason="state")
    other = browser.post_launch(action, id_token=id_token, state="state-of-another-login")
    assert_refused(browser, other, reason="state")


def test_a_login_whose_target_link_uri_points_elsewhere_is_refused(live_db: None, lti_platform: LmsPlatform) -> None:
    browser = LmsBrowser(lti_platform)
    response = browser.launch(spec(), target_link_uri="https%3A%2F%2Fevil.example%2F").response
    assert_refused(browser, response, reason="target_link_uri")


def test_a_garbage_launch_is_refused(live_db: None, lti_platform: LmsPlatform) -> None:
    browser = LmsBrowser(lti_platform)
    response = browser.session.post(lti_platform.registration.get_launch_url(),
                                    data={"id_token": "not.a.jwt", "state": "x"}, timeout=10)
    assert_refused(browser, response, reason="state")
