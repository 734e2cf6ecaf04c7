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


def test_feedback_words_render_code_emphasis_lists_and_site_links_and_nothing_else() -> None:
    from assignments.templatetags.statement import feedback_markdown, hint_markdown

    html = str(feedback_markdown("compute it as a new tensor (`d = x * 2`) and use that; <b>`$x$`</b> **bold**"))
    assert "<code>d = x * 2</code>" in html  # the backticks no longer shown literally
    assert "&lt;b&gt;" in html and "<b>" not in html and "<strong>bold</strong>" in html  # no raw HTML
    assert "<code>$x$</code>" in html  # a dollar inside code stays text: nothing here is typeset
    assert "<ul>\n<li>first</li>" in str(feedback_markdown("Check:\n\n- first\n- second"))
    linked = str(feedback_markdown("[the guide](/docs/student) or [here](https://evil.example)"))
    assert '<a href="/docs/student">the guide</a>' in linked and linked.count("<a ") == 1
    assert "[here](https://evil.example)" in linked  # an off-site link stays words, never a link
    quoted = str(feedback_markdown("you wrote 2*x*y and x**2, then __init__ and a_b"))
    assert "2*x*y" in quoted and "x**2" in quoted and "__init__" in quoted and "<em>" not in quoted
    assert "<img" not in str(feedback_markdown("![x](/static/x.png)")) and "<h1>" not in str(feedback_markdown("# h"))
    hint = str(hint_markdown("[a](https://e.example) *b*, [c](/docs/x)"))
    assert "<a " not in hint.replace('<a href="/docs/x">', "") and "<em>b</em>" in hint
