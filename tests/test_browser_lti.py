"""Headless Chromium: an LMS course page (served by the test platform) frames the tool; a student launches,
answers inside the iframe and the LMS gradebook receives the score."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.lti_platform.fixtures import platform_running
from tests.lti_platform.launches import LEARNER, LaunchSpec, Member
from tests.lti_platform.server import LmsPlatform
from tests.lti_platform.services import line_item_create
from tests.test_browser import page as page  # the Chromium page fixture

OUTPUT = Path(__file__).resolve().parent.parent / "test-output"


@pytest.fixture(scope="module")
def lti_platform(web_server: str, django_db_blocker: Any) -> Iterator[LmsPlatform]:
    yield from platform_running(web_server=web_server, django_db_blocker=django_db_blocker)


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
    tool.locator("#status-region").scroll_into_view_if_needed()
    OUTPUT.mkdir(exist_ok=True)
    page.screenshot(path=str(OUTPUT / "lti-iframe.png"), full_page=True)

    deadline = time.monotonic() + 60
    while not [s for s in lti_platform.state.scores if s["userId"] == student.user_id and
               s["line_item"] == column["id"]] and time.monotonic() < deadline:
        time.sleep(0.2)
    [score] = [s for s in lti_platform.state.scores if s["userId"] == student.user_id and
               s["line_item"] == column["id"]]
    assert score["scoreGiven"] == 1.0


# A frame that cannot keep cookies (Safari, or Chrome with third-party cookies blocked).
NO_COOKIES_IN_FRAMES = """if (window.top !== window) {
  Object.defineProperty(document, "cookie", {get: () => "", set: () => {}, configurable: true});
}"""


@pytest.mark.browser
@pytest.mark.integration
def test_a_frame_without_cookies_offers_a_new_window_where_the_launch_succeeds(
        live_db: None, web_server: str, lti_platform: LmsPlatform, page: Any) -> None:
    page.context.add_init_script(NO_COOKIES_IN_FRAMES)
    start = lti_platform.initiation_url(LaunchSpec(
        user=Member(user_id=f"user-{uuid.uuid4().hex[:10]}", name="Sam Safari", roles=[LEARNER]),
        custom={"assignment": "dead-relu"}))
    page.goto(lti_platform.url(f"/course?start={quote(start, safe='')}"))
    tool = page.frame_locator("#tool")
    button = tool.get_by_role("button", name="Open the assignment in a new window")
    button.wait_for()
    assert tool.get_by_text("does not let this LMS frame keep the cookies").is_visible()
    with page.expect_popup() as popup_info:
        button.click()
    popup = popup_info.value
    popup.wait_for_url(f"{web_server}/assignments/dead-relu/")
    assert popup.get_by_label("x.grad").count() == 1


@pytest.mark.browser
@pytest.mark.integration
def test_a_site_that_is_not_a_registered_platform_cannot_frame_the_tool(
        live_db: None, web_server: str, lti_platform: LmsPlatform, page: Any) -> None:
    stranger = ThreadingHTTPServer(("127.0.0.1", 0), _FramingPage)
    stranger.tool_url = f"{web_server}/accounts/login/"  # type: ignore[attr-defined]
    threading.Thread(target=stranger.serve_forever, daemon=True).start()
    try:
        blocked: list[str] = []
        page.on("console", lambda message: blocked.append(message.text))
        page.goto(f"http://127.0.0.1:{stranger.server_address[1]}/")
        page.wait_for_timeout(1500)
        frame = page.frame_locator("#tool")
        assert frame.get_by_label("User name").count() == 0  # the browser refused to render the tool
        assert any("frame-ancestors" in text for text in blocked), blocked
    finally:
        stranger.shutdown()
        stranger.server_close()
    page.goto(lti_platform.url(f"/course?start={quote(web_server + '/accounts/login/', safe='')}"))
    assert page.frame_locator("#tool").get_by_label("User name").count() == 1  # the registered platform may


class _FramingPage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f'<!doctype html><iframe id="tool" src="{self.server.tool_url}"></iframe>'.encode()  # type: ignore
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass
