"""An instructor in headless Chromium: enrol from a CSV file (dry run, then apply), read the
gradebook, drill down to a submission's highlighted code and feedback, and read the analytics chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assignments.services import membership_set
from tests.courseops_known import clone_assignment, graded_now, known_course_build
from tests.test_browser import log_in, page  # noqa: F401  (the Chromium page fixture)

OUTPUT = Path(__file__).resolve().parent.parent / "test-output"
WRONG_CODE = "def grad_z(x):\n    # z = 4x - x^3\n    return 4 + 3 * x**2\n"


@pytest.fixture
def staffed(live_db: None, worker: Any, make_user: Any) -> tuple[Any, Any, int]:
    """The known course with a graded code submission and an instructor; built before the page
    (Playwright's loop forbids database calls in the test body)."""
    known = known_course_build()
    coded = clone_assignment(slug="negative-gradient", course=known.course)
    coded_submission = graded_now(student=known.users["carol"], assignment=coded, answers={"x.grad": "-8"},
                                  code={"grad_z": WRONG_CODE})
    teacher = make_user("instructor")
    membership_set(user=teacher.user, course=known.course, role="instructor")
    return known, teacher, coded_submission.id


@pytest.mark.browser
@pytest.mark.integration
def test_an_instructor_enrols_reads_the_gradebook_drills_down_and_sees_the_chart(
    staffed: tuple[Any, Any, int], web_server: str, page: Any  # noqa: F811
) -> None:
    known, teacher, coded_id = staffed
    log_in(page, web_server, teacher)
    base = f"{web_server}/staff/courses/{known.course.slug}"

    page.goto(f"{base}/roster/")
    csv_text = "username,email,name,role,section\nzoe-new,zoe@example.org,Zoe New,student,B\nbad name,,x,student,\n"
    page.locator("#roster-file").set_input_files(files=[{"name": "roster.csv", "mimeType": "text/csv",
                                                          "buffer": csv_text.encode()}])
    page.get_by_role("button", name="Preview enrolment").click()
    assert "line 3: username" in page.locator(".row-errors").inner_text()  # nothing applied with a bad line
    page.locator("#roster-file").set_input_files(files=[{"name": "roster.csv", "mimeType": "text/csv",
                                                          "buffer": csv_text.splitlines()[0].encode() + b"\n"
                                                          + csv_text.splitlines()[1].encode() + b"\n"}])
    page.get_by_role("button", name="Preview enrolment").click()
    assert "create" in page.locator(".roster-preview").inner_text()
    page.screenshot(path=str(OUTPUT / "courseops-roster-preview.png"), full_page=True)
    page.get_by_role("button", name="Apply this enrolment (1 line)").click()
    assert "1 enrolled (1 with a new account" in page.locator(".messages").inner_text()
    assert "zoe-new" in page.locator("table.roster").inner_text()
    page.screenshot(path=str(OUTPUT / "courseops-roster.png"), full_page=True)

    page.get_by_role("link", name="Gradebook").click()
    alice = page.locator("table.gradebook tr", has_text=known.users["alice"].username)
    assert "late" in alice.inner_text() and "0.5" in alice.inner_text()
    assert page.locator("table.gradebook tbody tr").count() == 6  # five known students and zoe
    page.screenshot(path=str(OUTPUT / "courseops-gradebook.png"), full_page=True)

    carol = page.locator("table.gradebook tr", has_text=known.users["carol"].username)
    carol.locator(f'a[href$="/staff/submissions/{coded_id}/"]').click()  # the code assignment's cell
    assert page.locator(".source .linenos").count() == 1
    assert "return 4 + 3 * x**2" in page.locator("div.source").inner_text()
    assert page.locator(".source .c1").first.inner_text() == "# z = 4x - x^3"  # the comment is highlighted
    grad_z = page.locator('.part-result[data-part="grad_z"]')
    assert "incorrect" in grad_z.inner_text()
    graph = grad_z.locator("img.graph")
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=graph.element_handle())
    page.screenshot(path=str(OUTPUT / "courseops-drilldown.png"), full_page=True)

    page.goto(f"{web_server}/staff/assignments/{known.a.slug}/analytics/")
    x_part = page.locator('.analytics-part[data-part="x.grad"]')
    assert "8 attempts, 6 wrong" in x_part.locator(".analytics-totals").inner_text()
    bars = x_part.locator("svg.chart").first.locator("rect.chart-bar")
    assert bars.count() == 3  # missing_path, product_of_paths, unknown
    assert "4 (67 %)" in x_part.locator("svg.chart").first.inner_html()
    x_part.get_by_role("link", name="x → mul → add → z").click()
    assert page.locator("table.staff-submissions tbody tr").count() == 4  # the three 4s and the 12
    page.goto(f"{web_server}/staff/assignments/{known.a.slug}/analytics/")
    page.screenshot(path=str(OUTPUT / "courseops-analytics.png"), full_page=True)


@pytest.mark.browser
@pytest.mark.integration
def test_a_student_is_taken_to_the_result_and_the_header_score_updates_without_a_reload(
    live_db: None, worker: Any, web_server: str, student: Any, page: Any  # noqa: F811
) -> None:
    log_in(page, web_server, student)
    page.goto(f"{web_server}/assignments/visual-walkthrough/")
    assert "—" in page.locator("#assignment-meta").inner_text()  # nothing graded yet
    page.evaluate("window.__noReload = 'still-here'")
    page.get_by_label("x.grad").fill("7")
    page.get_by_label("y.grad").fill("2")
    page.get_by_role("button", name="Submit answers").click()
    page.wait_for_function("() => document.querySelector('#status-region [data-status=graded]') !== null")
    page.wait_for_function("() => document.activeElement && document.activeElement.dataset.status === 'graded'")
    assert "2 / 5" in page.locator("#assignment-meta").inner_text()  # swapped in when grading finished
    assert page.evaluate("window.__noReload") == "still-here"
    page.screenshot(path=str(OUTPUT / "courseops-student-result.png"), full_page=False)
