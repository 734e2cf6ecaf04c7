"""Headless Chromium: an LMS course page (served by the test platform) frames the tool; a student launches,
answers inside the iframe and the LMS gradebook receives the score."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.lti_platform.fixtures import platform_running
from tests.lti_platform.launches import LEARNER, LaunchSpec, Member
from tests.lti_platform.server import LmsPlatform
from tests.lti_platform.services import line_item_create
from tests.test_browser import CHROMIUM, CHROMIUM_ARGS

OUTPUT = Path(__file__).resolve().parent.parent / "test-output"


@pytest.fixture(scope="module")
def lti_platform(web_server: str, django_db_blocker: Any) -> Iterator[LmsPlatform]:
    yield from platform_running(web_server=web_server, django_db_blocker=django_db_blocker)


@pytest.fixture
def page() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1100, "height": 850})
        page = context.new_page()
        page.set_default_timeout(30_000)
        yield page
        context.close()
        browser.close()


@pytest.mark.browser
@pytest.mark.integration
def test_a_student_launches_inside_the_lms_iframe_and_the_score_reaches_the_gradebook(
        live_db: None, worker: Any, web_server: str, lti_platform: LmsPlatform, page: Any) -> None:
    student = Member(user_id=f"user-{uuid.uuid4().hex[:10]}", name="Iris Frame", roles=[LEARNER])
    link_id = f"iframe-{uuid.uuid4().hex[:8]}"
    column = line_item_create(state=lti_platform.state, base=lti_platform.url("/contexts/course-1/lineitems"),
                              body={"label": "Positive gradient", "scoreMaximum": 4, "resourceLinkId": link_id})
    start = lti_platform.initiation_url(LaunchSpec(user=student, resource_link_id=link_id,
                                                   custom={"assignment": "positive-gradient"}))
    page.goto(lti_platform.url(f"/course?start={quote(start, safe='')}"))
    tool = page.frame_locator("#tool")
    tool.get_by_label("x.grad").fill("7")  # the launch landed on the assignment page, inside the frame
    frame = next(f for f in page.frames if f.url.startswith(web_server))
    assert frame.url == f"{web_server}/assignments/positive-gradient/"
    tool.get_by_role("button", name="Submit answers").click()
    tool.locator("#status-region [data-status=graded]").wait_for()
    assert "correct" in tool.locator('#status-region .part-result[data-part="x.grad"]').inner_text()
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / "lti-iframe.png"), full_page=True)

    deadline = time.monotonic() + 60
    while not [s for s in lti_platform.state.scores if s["userId"] == student.user_id and
               s["line_item"] == column["id"]] and time.monotonic() < deadline:
        time.sleep(0.2)
    [score] = [s for s in lti_platform.state.scores if s["userId"] == student.user_id and
               s["line_item"] == column["id"]]
    assert score["scoreGiven"] == 1.0


@pytest.mark.browser
@pytest.mark.integration
def test_a_page_not_of_a_registered_platform_cannot_frame_the_tool(
        live_db: None, web_server: str, lti_platform: LmsPlatform) -> None:
    import requests

    response = requests.get(f"{web_server}/accounts/login/", timeout=10)
    policy = response.headers["Content-Security-Policy"]
    assert f"frame-ancestors 'self' {lti_platform.base}" in policy
    assert "X-Frame-Options" not in response.headers
