"""Headless Chromium: an LMS registers the grader by LTI Dynamic Registration, an operator activates it on the
LMS platforms page, and a launch from that LMS then succeeds. Screenshots of the LMS administration pages."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.lti_platform.launches import LEARNER, LaunchSpec, Member
from tests.lti_platform.server import DEPLOYMENT, LmsPlatform
from tests.test_browser import log_in
from tests.test_browser import page as page  # the Chromium page fixture

OUTPUT = Path(__file__).resolve().parent.parent / "test-output"
NO_SIDEWAYS_SCROLL = "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"


@pytest.fixture
def unregistered_lms(web_server: str) -> Iterator[LmsPlatform]:
    platform = LmsPlatform(tool_base=web_server).start()
    yield platform
    platform.stop()


@pytest.fixture
def operator(make_user: Any, django_db_blocker: Any) -> Any:
    person = make_user("student", prefix="operator")
    with django_db_blocker.unblock():
        person.user.is_staff = True
        person.user.save(update_fields=["is_staff"])
    return person


@pytest.fixture
def demo_slug(live_db: None) -> str:
    from assignments.services import course_demo

    return course_demo().slug  # read before Chromium starts: the ORM refuses calls from its event loop


@pytest.mark.browser
@pytest.mark.integration
def test_an_lms_registers_dynamically_and_launches_once_an_operator_activates_it(
        live_db: None, web_server: str, unregistered_lms: LmsPlatform, operator: Any, demo_slug: str,
        page: Any) -> None:
    lms = unregistered_lms
    log_in(page, web_server, operator)
    page.goto(f"{web_server}/lti/platforms/")
    registration_url = page.locator("#registration-url").inner_text().strip()

    # The LMS administrator pastes the URL into the LMS, which opens it in a frame with its two parameters.
    page.goto(lms.url(f"/register-tool?url={quote(registration_url, safe='')}"))
    tool = page.frame_locator("#tool")
    tool.get_by_text("not active yet").wait_for()
    tool.get_by_role("button", name="Close and return to the LMS").click()
    page.locator("#closed").wait_for()  # the LMS received org.imsglobal.lti.close
    [sent] = lms.dynamic.accepted
    assert sent["initiate_login_uri"] == f"{web_server}/lti/login/"

    # Before activation, a launch from that LMS is refused in words.
    student = Member(user_id=f"user-{uuid.uuid4().hex[:10]}", name="Dana Dynamic", roles=[LEARNER])
    spec = LaunchSpec(user=student, custom={"assignment": "positive-gradient"})
    page.goto(lms.initiation_url(spec) + "&lti_cookies_checked=1")
    assert page.get_by_text("not activated yet").is_visible()

    # The operator finds it inactive, binds the LMS course to the demo course and activates it.
    page.goto(f"{web_server}/lti/platforms/")
    entry = page.locator("section.platform", has_text=lms.client_id)
    assert entry.locator(".badge", has_text="inactive").count() >= 1
    entry.get_by_role("link").click()
    page.get_by_label("Deployment ID").fill(DEPLOYMENT)
    page.get_by_label("Grader course for named LMS courses").fill(demo_slug)
    page.get_by_label("LMS course (context) ids").fill("course-1")
    page.get_by_role("button", name="Save").click()
    page.get_by_role("button", name="Activate the platform").click()
    page.get_by_role("button", name="Deactivate the platform").wait_for()
    _screenshots(page, "lti-platform")
    page.goto(f"{web_server}/lti/platforms/")
    _screenshots(page, "lti-platforms")

    # A student's launch from that LMS now lands on the assignment, inside the LMS's frame.
    page.goto(lms.url(f"/course?start={quote(lms.initiation_url(spec), safe='')}"))
    page.frame_locator("#tool").get_by_label("x.grad").wait_for()
    frame = next(f for f in page.frames if f.url.startswith(web_server))
    assert frame.url == f"{web_server}/assignments/positive-gradient/"


def _screenshots(page: Any, name: str) -> None:
    """At 1280 and 390 px wide; at 390 the page must not scroll sideways."""
    OUTPUT.mkdir(exist_ok=True)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(OUTPUT / f"{name}-{width}.png"), full_page=True)
        assert page.evaluate(NO_SIDEWAYS_SCROLL), f"{name} scrolls sideways at {width} px"
    page.set_viewport_size({"width": 1100, "height": 900})


@pytest.mark.browser
@pytest.mark.integration
def test_the_setup_and_course_lms_pages_fit_a_phone_and_a_desktop(
        live_db: None, web_server: str, instructor: Any, demo_slug: str, page: Any) -> None:
    page.goto(f"{web_server}/lti/setup/")
    assert page.get_by_text("must be served over HTTPS with secure cookies").is_visible()
    _screenshots(page, "lti-setup")
    log_in(page, web_server, instructor)
    page.goto(f"{web_server}/lti/courses/{demo_slug}/")
    page.get_by_text("A student's first launch uses the roster account").wait_for()
    _screenshots(page, "lti-course")
