"""Accounts in headless Chromium: an instructor enrols a student from a CSV file with an invitation
(the console email backend prints it in the web server's log), the student chooses a password from the
email's link, logs in, and makes an API token in the web UI; at 1280 and 390 px."""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from assignments.models import Course
from assignments.services import membership_set
from tests.test_browser import log_in, page  # noqa: F401  (the Chromium page fixture)

OUTPUT = Path(__file__).resolve().parent.parent / "test-output"
LINK = re.compile(r"(http://127\.0\.0\.1:\d+/accounts/reset/[^/\s]+/[^/\s]+/)")


@pytest.fixture
def teaching(live_db: None, make_user: Any) -> tuple[Any, str]:
    """An instructor of a course of their own (built before the page: Playwright's loop forbids
    database calls in the test body)."""
    course = Course.objects.create(slug=f"acc-{uuid.uuid4().hex[:6]}", title="Accounts course")
    teacher = make_user("instructor")
    membership_set(user=teacher.user, course=course, role="instructor")
    return teacher, course.slug


def _link_in_log(log: Path, start: int, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log, "rb") as fh:
            fh.seek(start)
            found = LINK.search(fh.read().decode(errors="replace"))
        if found:
            return found.group(1)
        time.sleep(0.2)
    raise AssertionError(f"no set-password link in {log}")


@pytest.mark.browser
def test_an_invited_student_chooses_a_password_and_makes_an_api_token(
    teaching: tuple[Any, str], web_server: str, page: Any  # noqa: F811
) -> None:
    teacher, course = teaching
    page.set_viewport_size({"width": 1280, "height": 900})
    log = OUTPUT / "web.log"
    start = log.stat().st_size
    username = f"ivy-{uuid.uuid4().hex[:6]}"
    log_in(page, web_server, teacher)
    page.goto(f"{web_server}/staff/courses/{course}/roster/")
    csv_text = f"username,email,name,role,section\n{username},{username}@school.edu,Ivy Invited,student,A\n"
    page.locator("#roster-file").set_input_files(files=[{"name": "roster.csv", "mimeType": "text/csv",
                                                          "buffer": csv_text.encode()}])
    page.get_by_role("button", name="Preview enrolment").click()
    page.get_by_label("Email each new account an invitation").check()
    page.screenshot(path=str(OUTPUT / "accounts-roster-invite.png"), full_page=True)
    page.get_by_role("button", name="Apply this enrolment (1 line)").click()
    assert "Invitations sent to 1 account." in page.locator(".messages").inner_text()
    page.get_by_role("button", name="Log out").click()

    link = _link_in_log(log, start)  # the console backend printed the invitation
    page.goto(link)
    page.get_by_label("New password").fill("ivy-chose-this-1")
    page.get_by_label("The same password again").fill("ivy-chose-this-1")
    page.screenshot(path=str(OUTPUT / "accounts-set-password.png"), full_page=True)
    page.get_by_role("button", name="Set my password").click()
    assert "Your password is set" in page.locator("h1").inner_text()
    page.get_by_role("link", name="Log in").click()
    page.get_by_label("User name").fill(username)
    page.get_by_label("Password").fill("ivy-chose-this-1")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{web_server}/")

    page.get_by_role("link", name="API tokens").click()
    page.get_by_label("Expires after (days)").fill("30")
    page.get_by_role("button", name="Create a token").click()
    key = page.locator("#token-key").inner_text()
    assert len(key) >= 30 and f"{key[:8]}…" in page.locator("table.tokens").inner_text()
    page.screenshot(path=str(OUTPUT / "accounts-tokens.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(OUTPUT / "accounts-tokens-phone.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scrolling
    page.get_by_role("button", name=f"Revoke token {key[:8]}").click()
    assert "revoked" in page.locator(".messages").inner_text()
    page.get_by_role("button", name="Log out").click()
    page.goto(f"{web_server}/accounts/password_reset/")
    page.screenshot(path=str(OUTPUT / "accounts-password-reset-phone.png"), full_page=True)
