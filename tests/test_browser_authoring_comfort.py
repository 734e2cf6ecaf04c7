"""The assignment form in headless Chromium at 1280 and 390 px: Preview reachable from the bottom of the form,
several parts added at once with a kind's config template filled in, the preview at full width with its
numbers on one line, and no CSP violation in the console. Screenshots: authoring-comfort-*.png."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from assignments.models import Assignment, Course
from assignments.services import membership_set
from tests.courseops_known import clone_assignment
from tests.test_browser import OUTPUT, log_in
from tests.test_browser import page as page  # the fixture


@pytest.fixture
def authoring(live_db: None, make_user: Any) -> dict[str, Any]:
    course = Course.objects.create(slug=f"comfort-{uuid.uuid4().hex[:6]}", title="Comfort")
    assignment = clone_assignment(slug="visual-walkthrough", course=course)
    parts = assignment.parts.count()
    Assignment.objects.filter(id=assignment.id).update(published=True, version=1)
    teacher = make_user("instructor")
    membership_set(user=teacher.user, course=course, role="instructor")
    return {"slug": assignment.slug, "teacher": teacher, "parts": parts}


def _top_in_view(page: Any, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    return box is not None and 0 <= box["y"] < page.viewport_size["height"] - 40


@pytest.mark.browser
@pytest.mark.integration
def test_the_form_adds_parts_fills_templates_and_previews_from_anywhere_at_full_width(
    authoring: dict[str, Any], worker: Any, web_server: str, page: Any
) -> None:
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, web_server, authoring["teacher"])
    page.goto(f"{web_server}/staff/assignments/{authoring['slug']}/edit/")
    page.screenshot(path=str(OUTPUT / "authoring-comfort-form.png"))

    total = authoring["parts"] + 1  # the formset's one empty part
    page.get_by_label("Add", exact=True).select_option("3")
    page.get_by_role("button", name="Add empty parts").click()
    assert page.locator("fieldset.part-form").count() == total + 3
    assert page.locator("#id_parts-TOTAL_FORMS").input_value() == str(total + 3)
    new = total  # the first added part's index
    page.locator(f"#id_parts-{new}-kind").select_option("choice")
    assert "options = [" in page.locator(f"#id_parts-{new}-config").input_value()
    page.locator(f"#id_parts-{new}-kind").select_option("symbolic")  # an untouched template follows the kind
    assert "variables = " in page.locator(f"#id_parts-{new}-config").input_value()
    page.locator(f"#id_parts-{new}-key").fill("dz_dx_again")
    page.locator("fieldset.trial").scroll_into_view_if_needed()
    page.screenshot(path=str(OUTPUT / "authoring-comfort-parts.png"))
    assert _top_in_view(page, "#preview-button")  # the bar stays at the top of the screen

    page.get_by_label("x.grad (numeric)").fill("4")
    page.get_by_role("button", name="Preview").click()
    page.wait_for_selector("#preview .trial-result", timeout=90_000)
    assert _top_in_view(page, "#preview")  # brought to the preview
    width = page.locator("#preview").bounding_box()["width"]
    assert width >= 1000, width  # the page's width, not a 526 px column
    answers = page.locator("#preview table.mistakes td:first-child code")
    heights = {round(answers.nth(i).bounding_box()["height"]) for i in range(min(answers.count(), 6))}
    assert max(heights) < 30, heights  # each number on one line
    page.screenshot(path=str(OUTPUT / "authoring-comfort-preview.png"))

    page.get_by_role("button", name="Save").click()
    page.wait_for_selector(".messages")
    assert page.locator("fieldset.part-form").count() == total + 1  # the filled part kept, empty ones dropped
    assert page.locator("input[value=dz_dx_again]").count() == 1

    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(OUTPUT / "authoring-comfort-form-phone.png"))
    page.get_by_role("button", name="Preview").click()
    page.wait_for_selector("#preview .part-preview", timeout=90_000)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(OUTPUT / "authoring-comfort-preview-phone.png"))
    assert not [p for p in problems if "Content Security Policy" in p or "Refused" in p], problems
