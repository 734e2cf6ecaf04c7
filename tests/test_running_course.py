"""Running a course from the staff pages: the gradebook by title in a stable order with Total marked to
stay in view, extensions that keep what was typed and can be edited and removed, one date format."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from assignments.models import Assignment, Course, Extension
from assignments.services import membership_set
from tests.clients import logged_in
from tests.courseops_known import clone_assignment, known_course_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(make_user: Any) -> dict[str, Any]:
    course = Course.objects.create(slug=f"run-{uuid.uuid4().hex[:6]}", title="Running")
    zeta = clone_assignment(slug="visual-walkthrough", course=course)
    alpha = clone_assignment(slug="dead-relu", course=course)
    due = timezone.make_aware(datetime(2026, 10, 5, 17, 0), timezone.get_fixed_timezone(0))
    Assignment.objects.filter(id=zeta.id).update(title="Zeta: the last title", due_at=due, published=True,
                                                 time_zone="Europe/Berlin")
    Assignment.objects.filter(id=alpha.id).update(title="Alpha: the first title", due_at=due + timedelta(days=7),
                                                  published=True)
    people = {role: make_user(role) for role in ("instructor", "student")}
    for role, person in people.items():
        membership_set(user=person.user, course=course, role=role)
    return {"course": course, "zeta": zeta, "alpha": alpha, **people}


def _header(page: str) -> str:
    return page[page.index("<thead>"):page.index("</thead>")]


def test_gradebook_columns_are_titles_in_an_order_a_new_due_date_does_not_change(running: Any) -> None:
    client, url = logged_in(running["instructor"]), f"/staff/courses/{running['course'].slug}/gradebook/"
    header = _header(client.get(url).content.decode())
    assert header.index("Alpha: the first title") < header.index("Zeta: the last title")
    assert f">{running['zeta'].slug}<" not in header  # the slug is no label
    Assignment.objects.filter(id=running["alpha"].id).update(due_at=timezone.now() + timedelta(days=400))
    again = _header(client.get(url).content.decode())
    assert again.index("Alpha: the first title") < again.index("Zeta: the last title")
    assert 'class="total"' in again


def test_a_refused_extension_keeps_what_was_typed(running: Any) -> None:
    url = f"/staff/assignments/{running['zeta'].slug}/extensions/"
    refused = logged_in(running["instructor"]).post(url, {"username": running["student"].user.username,
                                                          "due_at": "2026-10-12T17:00", "extra": "-3",
                                                          "reason": "flu, note from the doctor"})
    page = refused.content.decode()
    assert refused.status_code == 400 and "extra attempts must be from 0 to 1000" in page
    assert 'value="2026-10-12T17:00"' in page and 'value="flu, note from the doctor"' in page
    assert f'value="{running["student"].user.username}"' in page
    assert not Extension.objects.filter(assignment=running["zeta"]).exists()


def test_an_extension_can_be_edited_and_removed(running: Any) -> None:
    url, student = f"/staff/assignments/{running['zeta'].slug}/extensions/", running["student"].user.username
    client = logged_in(running["instructor"])
    client.post(url, {"username": student, "due_at": "2026-10-12T17:00", "extra": "1", "reason": "flu"})
    listed = client.get(url).content.decode()
    assert "Mon 12 Oct 2026, 17:00 CEST" in listed and "Mon 5 Oct 2026, 19:00 CEST" in listed  # Berlin time
    edit = client.get(url, {"edit": student}).content.decode()
    assert 'value="2026-10-12T17:00"' in edit and 'value="flu"' in edit and "Edit the extension of" in edit
    client.post(url, {"username": student, "due_at": "2026-10-14T09:00", "extra": "2", "reason": "flu, longer"})
    extension = Extension.objects.get(assignment=running["zeta"])
    assert extension.extra_attempts == 2 and extension.reason == "flu, longer"
    removed = client.post(url, {"remove": student}, follow=True).content.decode()
    assert "removed" in removed and not Extension.objects.filter(assignment=running["zeta"]).exists()


def test_analytics_and_the_submission_list_name_each_mistake_in_words(django_db_setup: None) -> None:
    known = known_course_build()
    teacher = get_user_model().objects.create(username=f"t-{uuid.uuid4().hex[:6]}")
    membership_set(user=teacher, course=known.course, role="instructor")
    client = Client()
    client.force_login(teacher)
    page = client.get(f"/staff/assignments/{known.a.slug}/analytics/").content.decode()
    assert "Leaving out a path: 4" in page and "leaving out a path" in page  # the list and the chart's bar
    assert "Multiplying parallel paths instead of adding them: 1" in page
    assert "missing_path: " not in page and ">missing_path<" not in page
    listed = client.get(f"/staff/assignments/{known.a.slug}/submissions/", {"kind": "missing_path"}).content.decode()
    assert "x.grad: leaving out a path" in listed and '<option value="missing_path" selected>' in listed


def test_the_enrolment_message_counts_new_accounts_as_enrolled(running: Any, make_user: Any) -> None:
    url = f"/staff/courses/{running['course'].slug}/roster/"
    tag, existing = uuid.uuid4().hex[:6], make_user("student", prefix="known").user.username
    csv_text = (f"username,email,name,role,section\nnew1-{tag},,One,student,A\nnew2-{tag},,Two,student,A\n"
                f"{existing},,,student,B\n")
    done = logged_in(running["instructor"]).post(url, {"csv": csv_text, "apply": "1"}, follow=True)
    assert ("Enrolment done: 3 enrolled (2 with new accounts, 1 with an existing account)."
            in done.content.decode()), done.content.decode()[-3000:]
