"""A student in headless Chromium: log in, answer, watch the feedback arrive without a reload."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

OUTPUT = Path(__file__).resolve().parent.parent / "test-output"

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update"]


@pytest.fixture
def page() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1100, "height": 900})
        page = context.new_page()
        page.set_default_timeout(30_000)
        yield page
        context.close()
        browser.close()


def log_in(page: Any, base: str, person: Any) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("User name").fill(person.user.username)
    page.get_by_label("Password").fill(person.password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/")


def submit_and_wait(page: Any, answer: str) -> Any:
    """Types an answer to x.grad, submits, and returns the feedback item of that part once graded."""
    page.get_by_label("x.grad").fill(answer)
    page.get_by_role("button", name="Submit answers").click()
    page.wait_for_function("() => document.querySelector('#status-region [data-status=graded]') !== null "
                           f"&& document.querySelector('#status-region .part-result[data-part=\"x.grad\"]') !== null "
                           f"&& document.querySelector('#status-region .answer').textContent === {answer!r}")
    return page.locator('#status-region .part-result[data-part="x.grad"]')


@pytest.mark.browser
@pytest.mark.integration
def test_a_student_sees_path_feedback_and_the_graph_appear_without_a_reload(
    live_db: None, worker: Any, web_server: str, student: Any, page: Any
) -> None:
    OUTPUT.mkdir(exist_ok=True)
    log_in(page, web_server, student)
    page.get_by_role("link", name="0. Visual walkthrough: z = xy + x²").click()
    page.wait_for_url(f"{web_server}/assignments/visual-walkthrough/")
    assert page.locator(".statement .katex").count() > 0  # the $…$ math was typeset
    page.evaluate("window.__noReload = 'still-here'")
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))

    wrong = submit_and_wait(page, "4")
    assert "incorrect" in wrong.inner_text()
    assert "x → mul → add → z" in wrong.inner_text()
    graph = wrong.locator("img.graph")
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=graph.element_handle())
    assert "/graph.svg?part=x.grad" in (graph.get_attribute("src") or "")
    assert page.get_by_label("x.grad").input_value() == "4"  # what the student typed is kept
    page.screenshot(path=str(OUTPUT / "browser-wrong-answer.png"), full_page=True)

    right = submit_and_wait(page, "7")
    text = right.inner_text()
    assert "correct" in text and "incorrect" not in text and "1 / 1" in text
    assert "How autograd got it" in right.locator("details.graph-details").inner_text()  # see test_browser_picture
    page.screenshot(path=str(OUTPUT / "browser-right-answer.png"), full_page=True)

    assert page.evaluate("window.__noReload") == "still-here"
    assert navigations == []
    assert "Attempts left" in page.locator("#assignment-meta").inner_text()


@pytest.mark.browser
@pytest.mark.integration
def test_the_pages_fit_a_phone_screen(live_db: None, web_server: str, student: Any, page: Any) -> None:
    page.set_viewport_size({"width": 375, "height": 740})
    log_in(page, web_server, student)
    page.screenshot(path=str(OUTPUT / "browser-phone-home.png"), full_page=True)
    page.goto(f"{web_server}/assignments/linear-layer/")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.get_by_label("w.grad").fill("not a number")
    page.get_by_role("button", name="Submit answers").click()
    error = page.locator("#answer-w-grad-error")
    error.wait_for()
    page.wait_for_function("document.activeElement.id === 'answer-w-grad'")  # focus moves to the field to fix
    assert page.get_by_label("w.grad").input_value() == "not a number"
    page.screenshot(path=str(OUTPUT / "browser-phone-error.png"), full_page=True)
