"""A term rollover in headless Chromium: an instructor copies last term's course with its dates moved to a new
first day, invites a student by email (the console backend prints it in the web server's log), the student
chooses a password from the email's link, logs in and submits, and appears in the new term's gradebook only."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.utils import timezone

from assignments.models import Assignment, Course
from assignments.services import membership_set
from authoring.course_copy import copy_slug
from tests.courseops_known import clone_assignment
from tests.test_browser import log_in, page, submit_and_wait  # noqa: F401  (the Chromium page fixture)
from tests.test_browser_accounts import OUTPUT, _link_in_log


@pytest.fixture
def last_term(live_db: None, make_user: Any) -> dict[str, Any]:
    """Last term's course, its one assignment long closed, and an instructor who may create courses (built
    before the page: Playwright's loop forbids database calls in the test body)."""
    tag = uuid.uuid4().hex[:6]
    course = Course.objects.create(slug=f"fall-{tag}", title="Autograd, fall term")
    live = clone_assignment(slug="visual-walkthrough", course=course)
    opens = timezone.now() - timedelta(days=121)
    Assignment.objects.filter(id=live.id).update(opens_at=opens, due_at=opens + timedelta(days=8),
                                                 closes_at=opens + timedelta(days=10), published=True, version=1)
    teacher = make_user("instructor")
    teacher.user.user_permissions.add(Permission.objects.get(codename="add_course"))
    membership_set(user=teacher.user, course=course, role="instructor")
    old_student = make_user("student")
    membership_set(user=old_student.user, course=course, role="student")
    return {"course": course.slug, "assignment": live.slug, "teacher": teacher, "tag": tag,
            "first_day": timezone.localdate(opens), "old_student": old_student.user.username}


@pytest.mark.browser
@pytest.mark.integration
def test_a_course_copied_to_a_new_term_enrols_grades_and_lists_its_own_students(
    last_term: dict[str, Any], worker: Any, web_server: str, page: Any  # noqa: F811
) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    new = f"spring-{last_term['tag']}"
    start = last_term["first_day"] + timedelta(days=120)
    log_in(page, web_server, last_term["teacher"])
    page.goto(f"{web_server}/staff/courses/{last_term['course']}/")
    page.get_by_role("link", name="Copy to a new term").click()
    page.get_by_label("New course slug").fill(new)
    page.get_by_label("New title").fill("Autograd, spring term")
    page.get_by_label("…or move the first day to").fill(start.isoformat())
    page.get_by_role("button", name="Preview the dates").click()
    dates = page.locator(".copy-dates").inner_text()
    assert "shifted by 120 days" in page.locator("h2").first.inner_text()
    assert start.strftime("%-d %b %Y") in dates  # the new first day, before anything is written
    page.screenshot(path=str(OUTPUT / "rollover-copy-preview.png"), full_page=True)
    page.get_by_role("button", name="Copy the course").click()
    page.wait_for_url(f"{web_server}/staff/courses/{new}/")
    assert "Copied Autograd, fall term" in page.locator(".messages").inner_text()

    log = OUTPUT / "web.log"
    offset = log.stat().st_size
    username = f"una-{uuid.uuid4().hex[:6]}"
    page.goto(f"{web_server}/staff/courses/{new}/roster/")
    csv_text = f"username,email,name,role,section\n{username},{username}@school.edu,Una New,student,A\n"
    page.locator("#roster-file").set_input_files(files=[{"name": "roster.csv", "mimeType": "text/csv",
                                                          "buffer": csv_text.encode()}])
    page.get_by_role("button", name="Preview enrolment").click()
    page.get_by_label("Email each new account an invitation").check()
    page.get_by_role("button", name="Apply this enrolment (1 line)").click()
    assert "Invitations sent to 1 account." in page.locator(".messages").inner_text()
    page.get_by_role("button", name="Log out").click()

    page.goto(_link_in_log(log, offset))  # the invitation's set-password link
    page.get_by_label("New password").fill("una-chose-this-1")
    page.get_by_label("The same password again").fill("una-chose-this-1")
    page.get_by_role("button", name="Set my password").click()
    assert "Your password is set" in page.locator("h1").inner_text()
    page.get_by_role("link", name="Log in").click()
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill("una-chose-this-1")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{web_server}/")
    copy = copy_slug(slug=last_term["assignment"], course_slug=new)
    page.goto(f"{web_server}/assignments/{copy}/")
    assert "correct" in submit_and_wait(page, "7").inner_text()
    page.get_by_role("button", name="Log out").click()

    log_in(page, web_server, last_term["teacher"])
    page.goto(f"{web_server}/staff/courses/{new}/gradebook/")
    book = page.locator("table.gradebook").inner_text()
    assert username in book and "1 (1)" in book.replace("\t", " ") and last_term["old_student"] not in book
    page.screenshot(path=str(OUTPUT / "rollover-new-gradebook.png"), full_page=True)
    page.goto(f"{web_server}/staff/courses/{last_term['course']}/gradebook/")
    old = page.locator("table.gradebook").inner_text()
    assert username not in old and last_term["old_student"] in old
