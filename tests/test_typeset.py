"""Student-controlled text is never typeset by KaTeX: an exception message quoted in a
diagnosis drew a 2000 px box or a fake "✓ correct" on the instructor's page. Real Chromium."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_browser import OUTPUT, log_in, page  # noqa: F401  (the page fixture)
from tests.test_security import crafted_submission

BOX = r"$\rule{2000px}{2000px}$"
FAKE = r"$\color{green}\text{✓ correct}$"


@pytest.fixture
def hostile(live_db: None, student: Any) -> Any:
    """Created before the browser starts (its event loop makes the ORM refuse to run)."""
    return crafted_submission(student, answer=FAKE, message=f"ZeroDivisionError: {BOX} {FAKE}")


@pytest.mark.browser
@pytest.mark.integration
def test_math_in_student_text_stays_text_on_the_instructor_page(
    web_server: str, hostile: Any, instructor: Any, page: Any  # noqa: F811
) -> None:
    submission = hostile
    log_in(page, web_server, instructor)
    page.goto(f"{web_server}/submissions/{submission.id}/")
    page.wait_for_selector(".feedback .diagnosis")
    page.wait_for_function("() => window.renderMathInElement !== undefined")
    page.screenshot(path=str(OUTPUT / "typeset-student-text.png"))
    assert page.locator(".feedback .katex").count() == 0
    assert BOX in page.locator(".feedback .diagnosis").inner_text()
    assert page.locator(".feedback").bounding_box()["height"] < 1000
    page.goto(f"{web_server}/assignments/visual-walkthrough/")
    assert page.locator(".statement .katex").count() > 0  # the instructor's own math still is


def test_feedback_words_show_their_code_in_code_type_and_nothing_else_as_markup() -> None:
    from assignments.templatetags.statement import code_spans

    html = str(code_spans("compute it as a new tensor (`d = x * 2`) and use that; <b>`$x$`</b> **bold**"))
    assert "<code>d = x * 2</code>" in html  # the backticks no longer shown literally
    assert "&lt;b&gt;" in html and "<b>" not in html and "**bold**" in html  # escaped, no Markdown
    assert "<code>$x$</code>" in html  # a dollar inside code stays text: nothing here is typeset
