"""The feedback release as a student meets it in Chromium, at desktop and phone width: a wrong
answer shows what the level allows (the words alone, then the whole picture once the last attempt
is used), the picture's own URL gives no more than the page, and the page fits the phone."""

from __future__ import annotations

import re
import uuid
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from assignments.models import Assignment
from assignments.services import course_demo
from authoring import publishing
from tests.test_browser import OUTPUT, log_in, page  # noqa: F401  (the page fixture)

SVG = "{http://www.w3.org/2000/svg}"
REFERENCE = "x = torch.tensor(x0, requires_grad=True)\nz = 3 * x**2\nz.backward()\n"  # x.grad = 6x = 9 at 1.5


@pytest.fixture
def released(live_db: None) -> str:
    """Two attempts; words only before the last is used, the whole picture after. Created before the
    browser starts (its event loop makes the ORM refuse to run)."""
    data = {"slug": f"release-{uuid.uuid4().hex[:6]}", "title": "Release levels", "statement": "Find $x$'s gradient.",
            "reference": REFERENCE, "params": {"x0": 1.5}, "parts": [{"key": "x.grad"}],
            "policy": {"counts": "best", "late_penalty": [], "max_attempts": 2, "reveal": "after_attempts",
                       "release_before": "words", "release_after": "full_picture"}}
    assignment = publishing.assignment_create(course=course_demo(), data=data)
    Assignment.objects.filter(pk=assignment.pk).update(published=True)
    return assignment.slug


def _wrong_attempt(tab: Any, answer: str) -> Any:
    tab.get_by_label("x.grad").fill(answer)
    tab.get_by_role("button", name="Submit answers").click()
    tab.wait_for_function("n => document.querySelector('#status-region [data-status=graded]') !== null && "
                           "document.querySelector('#status-region .answer')?.textContent === n", arg=answer)
    tab.goto(tab.url)  # the page as a reload shows it: the meta row follows the attempts used
    return tab.locator('.part-result[data-part="x.grad"]').first


def _svg_texts(tab: Any, base: str) -> tuple[int, list[str]]:
    """What the student gets by fetching the picture's address directly (their own session)."""
    submission = tab.locator("a[href^='/submissions/']").first.get_attribute("href") or ""
    response = tab.request.get(f"{base}{submission}graph.svg?part=x.grad")
    if response.status != 200:
        return response.status, []
    root = ET.fromstring(response.body())
    return 200, ["".join(text.itertext()).strip() for text in root.iter(f"{SVG}text")]


@pytest.mark.browser
@pytest.mark.integration
@pytest.mark.parametrize("width", [1280, 390])
def test_a_student_gets_the_words_first_and_the_whole_picture_after_the_last_attempt(
    worker: Any, web_server: str, student: Any, released: str, width: int, page: Any  # noqa: F811
) -> None:
    OUTPUT.mkdir(exist_ok=True)
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, web_server, student)
    page.goto(f"{web_server}/assignments/{released}/")
    part = _wrong_attempt(page, "3")
    assert "incorrect" in part.inner_text() and part.locator(".diagnosis").count() == 1
    assert part.locator("img.graph").count() == 0 and "9" not in re.sub(r"\d+\.\d+|\d{2,}", "", part.inner_text())
    meta = page.locator("#assignment-meta").inner_text()
    assert "the verdict and what went wrong; once you have used all your attempts" in meta
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(OUTPUT / f"release-before-{width}.png"), full_page=True)
    page.goto(f"{web_server}/assignments/{released}/submissions/")
    status, _ = _svg_texts(page, web_server)
    assert status == 404  # the picture's URL, fetched directly, is refused like the page

    page.goto(f"{web_server}/assignments/{released}/")
    part = _wrong_attempt(page, "3")  # the last attempt: the level after takes over
    graph = part.locator("img.graph")
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=graph.element_handle())
    assert "Expected answer" not in part.inner_text()  # the whole picture, not the answer key
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(OUTPUT / f"release-after-{width}.png"), full_page=True)
    page.goto(f"{web_server}/assignments/{released}/submissions/")
    status, texts = _svg_texts(page, web_server)
    assert status == 200 and "x.grad = 9" in texts, texts


@pytest.mark.browser
@pytest.mark.integration
def test_every_catalog_assignment_page_fits_a_phone(live_db: None, web_server: str, student: Any,
                                                    page: Any) -> None:  # noqa: F811
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, web_server, student)
    slugs = page.eval_on_selector_all("table.assignments a[href^='/assignments/']",
                                      "links => links.map(a => a.getAttribute('href'))")
    assert len(slugs) >= 10
    wide = {}
    for href in slugs:
        page.goto(f"{web_server}{href}", wait_until="load")  # KaTeX renders on DOMContentLoaded, before load
        # (a statement without maths has no .katex to wait for: other tests' assignments may be listed too)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        if overflow > 0:
            wide[href] = overflow
            page.screenshot(path=str(OUTPUT / f"phone-overflow-{href.strip('/').replace('/', '-')}.png"))
    assert not wide, wide


@pytest.mark.browser
@pytest.mark.integration
def test_a_highlighted_code_blocks_lines_start_at_the_same_place(live_db: None, web_server: str, student: Any,
                                                                page: Any) -> None:  # noqa: F811
    log_in(page, web_server, student)
    page.goto(f"{web_server}/assignments/visual-walkthrough/submissions/")  # loads the code styles
    lefts = page.evaluate("""() => {
        const block = document.createElement('div');
        block.innerHTML = '<div class="source"><pre><span></span><code><span id="l1">x</span> = 1\\n'
                        + '<span id="l2">a</span> = x</code></pre></div>';
        document.querySelector('main, body').appendChild(block);
        return ['l1', 'l2'].map(id => document.getElementById(id).getBoundingClientRect().left);
    }""")
    assert abs(lefts[0] - lefts[1]) < 0.5, lefts  # the first line was a character to the right
