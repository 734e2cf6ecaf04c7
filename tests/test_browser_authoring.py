"""An instructor authors in headless Chromium (create, edit the reference in the editor, preview, trial
wrong answer, vet, publish) and a student then answers the published assignment; the reveal policy
shows the student the answer key once their attempt is used; an import keeps a weak file as a
draft; an archived assignment is restored."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.test_browser import OUTPUT, log_in
from tests.test_browser import page as page  # the fixture

REFERENCE_LINES = ["x = torch.tensor(x0, requires_grad=True)", "y = torch.tensor(y0, requires_grad=True)",
                   "z = 3 * x**2 + 2 * y", "z.backward()"]


def _shot(page: Any, name: str) -> None:
    page.screenshot(path=str(OUTPUT / f"authoring-{name}.png"), full_page=True)


def _type_reference(page: Any, lines: list[str]) -> None:
    editor = page.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    for line in lines:
        page.keyboard.type(line)
        page.keyboard.press("Enter")


@pytest.mark.browser
@pytest.mark.integration
def test_an_instructor_authors_previews_vets_and_publishes_and_a_student_answers(
    live_db: None, worker: Any, web_server: str, instructor: Any, student: Any, page: Any
) -> None:
    OUTPUT.mkdir(exist_ok=True)
    slug = f"browser-{uuid.uuid4().hex[:6]}"
    log_in(page, web_server, instructor)
    page.locator("header.site a.staff-link").click()  # the header's Staff link
    page.wait_for_url(f"{web_server}/staff/")
    assert "Instructor" in page.locator("table.staff-courses").inner_text()
    page.locator("table.staff-courses a").first.click()
    page.get_by_role("link", name="New assignment").click()

    page.get_by_label("Slug").fill(slug)
    page.get_by_label("Title").fill("Browser-made: z = 3x² + 2y")
    page.get_by_label("Statement").fill("Let $z = 3x^2 + 2y$ at $x = 1.5$, $y = -0.5$. Find `x.grad`.")
    page.wait_for_selector(".cm-editor")  # the editor is a module script: it may run after the fields
    assert page.locator(".cm-editor").count() == 1  # CodeMirror replaced the textarea
    _type_reference(page, ["x = torch.tensor(x0, requires_grad=True)", "z = x * q"])  # a first, broken try
    page.get_by_label("Params").fill("x0 = 1.5\ny0 = -0.5")
    page.get_by_label("Key").fill("x.grad")
    page.locator("#id_parts-0-prompt").fill("Find $\\partial z / \\partial x$.")
    page.get_by_label("Max attempts").fill("1")
    page.get_by_label("Reveal").select_option("after_attempts")  # the answer key once the one attempt is used
    _shot(page, "create")
    page.get_by_role("button", name="Create draft").click()
    page.wait_for_url(f"{web_server}/staff/assignments/{slug}/edit/")

    page.get_by_role("button", name="Preview").click()
    page.wait_for_selector("#preview .reference-error")
    assert "program line 2" in page.locator("#preview").inner_text()
    assert "z = x * q" in page.locator("#preview pre.source .failing").inner_text()
    _shot(page, "reference-error")

    _type_reference(page, REFERENCE_LINES)
    assert "z = 3 * x**2 + 2 * y" in page.locator("#id_reference").input_value()  # the editor writes back
    page.get_by_label("x.grad (numeric)").fill("3")  # dz/dx = 6x = 9; 3 drops the power rule's factor 2x
    page.get_by_role("button", name="Preview").click()
    page.wait_for_selector("#preview .trial-result")
    preview = page.locator("#preview").inner_text()
    assert "9" in preview and "Feedback space" in preview
    assert page.locator("#preview .graph-picture svg").count() >= 1
    # Math typeset as students see it: the statement and the part's prompt (instructor text, class "math").
    assert page.locator("#preview .statement-preview .statement .katex").count() > 0
    assert page.locator("#preview .statement-preview .prompt .katex").count() > 0
    assert "Score: 0 / 1" in page.locator("#preview .trial-result").inner_text()
    _shot(page, "preview-trial")

    # Keyboard: Tab indents inside the editor; Escape then Tab leaves it.
    page.locator(".cm-content").click()
    page.keyboard.press("End")
    page.keyboard.press("Tab")
    assert page.locator("#id_reference").input_value().count("    ") >= 1
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert page.evaluate("() => !document.activeElement.closest('.cm-editor')")

    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"{web_server}/staff/assignments/{slug}/edit/")
    page.get_by_role("link", name="Vet and publish").click()
    _shot(page, "vetting")
    page.get_by_role("button", name="Vet and publish version 1").click()  # a worker vets; the page polls
    page.wait_for_selector(".authoring-job[data-job-status=done] >> text=Published version 1.")
    _shot(page, "published")

    page.context.clear_cookies()
    log_in(page, web_server, student)
    assert page.locator("header.site a.staff-link").count() == 0  # students get no Staff link
    page.get_by_role("link", name="Browser-made: z = 3x² + 2y").click()
    assert page.locator("#answer-key-heading").count() == 0  # nothing revealed before the attempt
    page.get_by_label("x.grad").fill("3")
    page.get_by_role("button", name="Submit answers").click()
    page.wait_for_selector("#status-region [data-status=graded]")
    result = page.locator("#status-region").inner_text()
    assert "incorrect" in result and "Expected answer: 9.0" in result  # the last attempt reveals it
    _shot(page, "student-result")
    page.reload()
    assert "9.0" in page.locator(".answer-key").inner_text()
    page.wait_for_function("() => document.querySelector('.answer-key img.graph').naturalWidth > 0")
    _shot(page, "student-answer-key")

    page.context.clear_cookies()
    log_in(page, web_server, instructor)
    page.goto(f"{web_server}/staff/courses/autograd-101/")
    weak = f"weak-{slug}"  # z = 3x² at x0 = 0: the answer 0 passes, so the import must not publish it
    weak_toml = (f'slug = "{weak}"\ntitle = "Weak"\nstatement = "s"\nreference = """\n{REFERENCE_LINES[0]}\n'
                 'z = 3 * x**2\nz.backward()\n"""\n[params]\nx0 = 0.0\n[[parts]]\nkey = "x.grad"\n')
    page.get_by_label("Catalog TOML file or zip of them").set_input_files(
        files=[{"name": f"{weak}.toml", "mimeType": "application/toml", "buffer": weak_toml.encode()}])
    page.get_by_role("button", name="Import").click()
    page.wait_for_selector(".authoring-job[data-job-status=done]")
    outcome = page.locator(".import-outcomes").inner_text()
    assert f"kept as a draft {weak}" in outcome and "the answer 0 passes" in outcome
    _shot(page, "import-draft")

    page.goto(f"{web_server}/staff/assignments/{slug}/edit/")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete").click()
    page.wait_for_selector("text=archived: its submissions are kept.")
    page.get_by_role("button", name="Restore Browser-made: z = 3x² + 2y").click()
    page.wait_for_selector(f"text={slug} restored as published (v1), with its 1 submission(s).")
