"""The staff pages an instructor runs a course from, in headless Chromium at 1280 and 390 px: the gradebook
keeps Total in view however many assignments it has, and the course, edit and gradebook pages never scroll
sideways on a phone. Screenshots in test-output/ (staff-*.png)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from assignments.models import Assignment, Course
from assignments.services import membership_set
from tests.courseops_known import clone_assignment
from tests.test_browser import OUTPUT, log_in
from tests.test_browser import page as page  # the fixture

CATALOG = ["visual-walkthrough", "dead-relu", "detach", "linear-layer", "multiple-paths", "negative-gradient",
           "non-scalar", "positive-gradient", "untracked-leaf", "accumulation"]


@pytest.fixture
def wide_course(live_db: None, make_user: Any) -> dict[str, Any]:
    """Ten published assignments with long titles and three students (built before the page: Playwright's
    loop forbids database calls in the test body)."""
    course = Course.objects.create(slug=f"wide-{uuid.uuid4().hex[:6]}", title="A course with many assignments")
    slugs = []
    for number, slug in enumerate(CATALOG, start=1):
        copy = clone_assignment(slug=slug, course=course)
        Assignment.objects.filter(id=copy.id).update(published=True, version=1,
                                                     title=f"Week {number}: {copy.title}")
        slugs.append(copy.slug)
    teacher = make_user("instructor")
    membership_set(user=teacher.user, course=course, role="instructor")
    for _ in range(3):
        membership_set(user=make_user("student").user, course=course, role="student")
    return {"course": course.slug, "slugs": slugs, "teacher": teacher}

PAST_THE_EDGE = """w => [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > w).slice(0, 8)
    .map(e => `${e.tagName}.${e.className}#${e.id} ${Math.round(e.getBoundingClientRect().right)}`)"""


def _no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    wide = page.evaluate(PAST_THE_EDGE, page.viewport_size["width"])
    assert width <= page.viewport_size["width"], f"{page.url}: {width} px wide; past the edge: {wide}"


@pytest.mark.browser
def test_total_stays_in_view_and_no_staff_page_scrolls_sideways_on_a_phone(
    wide_course: dict[str, Any], web_server: str, page: Any
) -> None:
    OUTPUT.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, web_server, wide_course["teacher"])
    course_url = f"{web_server}/staff/courses/{wide_course['course']}/"
    page.goto(f"{course_url}gradebook/")
    header = page.locator("table.gradebook thead").inner_text()
    assert header.index("Week 1:") < header.index("Week 2:") < header.index("Week 10:")  # by title, numbers by value
    total = page.locator("table.gradebook thead th.total").bounding_box()
    assert total is not None and total["x"] + total["width"] <= 1280  # in view without scrolling the table
    page.screenshot(path=str(OUTPUT / "staff-gradebook.png"), full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    for url, name in [(course_url, "course"), (f"{course_url}gradebook/", "gradebook"),
                      (f"{web_server}/staff/assignments/{wide_course['slugs'][0]}/edit/", "edit")]:
        page.goto(url)
        _no_sideways_scroll(page)
        page.screenshot(path=str(OUTPUT / f"staff-{name}-phone.png"), full_page=True)
    page.goto(f"{course_url}gradebook/")
    box = page.locator("table.gradebook tbody td.total").first.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 390  # Total is in view on a phone too
