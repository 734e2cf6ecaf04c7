"""Copying a course into a new term from its page and from `POST /api/v1/courses/<slug>/copy/`: the shifted
dates previewed before anything is written, who may copy, and clear refusals."""

from __future__ import annotations

import uuid
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from assignments.models import Assignment, Course, Membership
from assignments.services import membership_set
from tests.clients import api, logged_in
from tests.courseops_known import clone_assignment

pytestmark = pytest.mark.django_db


@pytest.fixture
def fall(make_user: Any) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:6]
    course = Course.objects.create(slug=f"fall-{tag}", title="Autograd, fall")
    live = clone_assignment(slug="visual-walkthrough", course=course)
    opens = timezone.make_aware(datetime(2026, 9, 7, 9, 0))
    Assignment.objects.filter(id=live.id).update(opens_at=opens, due_at=opens + timedelta(days=7), published=True)
    live.refresh_from_db()
    people = {role: make_user(role) for role in ("instructor", "ta", "student")}
    for role, person in people.items():
        membership_set(user=person.user, course=course, role=role)
    return {"course": course, "live": live, "people": people, "tag": tag}


def test_the_course_page_links_to_the_copy_and_lists_each_assignment_once(fall: Any) -> None:
    with override_settings(GRADER_COURSE_CREATORS="instructors"):
        page = logged_in(fall["people"]["instructor"]).get(f"/staff/courses/{fall['course'].slug}/").content.decode()
    assert f"/staff/courses/{fall['course'].slug}/copy/" in page
    assert page.count(fall["live"].title) == 1 and f"/staff/assignments/{fall['live'].slug}/submissions/" in page
    plain = logged_in(fall["people"]["instructor"]).get(f"/staff/courses/{fall['course'].slug}/").content.decode()
    assert "/copy/" not in plain  # GRADER_COURSE_CREATORS="staff": instructors may not create courses


@override_settings(GRADER_COURSE_CREATORS="instructors")
def test_the_copy_form_previews_shifted_dates_then_copies_with_the_copier_as_instructor(fall: Any) -> None:
    client = logged_in(fall["people"]["ta"])
    url = f"/staff/courses/{fall['course'].slug}/copy/"
    assert client.get(url).status_code == 403  # a TA is staff but creates no courses under "instructors"
    client = logged_in(fall["people"]["instructor"])
    new = f"spring-{fall['tag']}"
    preview = client.post(url, {"slug": new, "start": "2027-01-11", "preview": ""})
    assert preview.status_code == 200 and not Course.objects.filter(slug=new).exists()
    text = preview.content.decode()
    assert "Mon 7 Sep 2026, 09:00" in text and "Mon 11 Jan 2027, 09:00" in text and "shifted by 126 days" in text
    done = client.post(url, {"slug": new, "title": "Autograd, spring", "start": "2027-01-11", "copy": ""})
    assert done.status_code == 302 and done["Location"] == f"/staff/courses/{new}/"
    copy = Assignment.objects.get(course__slug=new)
    assert copy.opens_at is not None and copy.opens_at.date() == date(2027, 1, 11) and copy.published
    assert Membership.objects.filter(course__slug=new, role="student").count() == 0
    assert Course.objects.get(slug=new).title == "Autograd, spring"


@override_settings(GRADER_COURSE_CREATORS="instructors")
def test_the_copy_form_keeps_what_was_typed_and_says_what_is_wrong(fall: Any) -> None:
    client = logged_in(fall["people"]["instructor"])
    url = f"/staff/courses/{fall['course'].slug}/copy/"
    both = client.post(url, {"slug": "new-one", "shift_days": "7", "start": "2027-01-11", "copy": ""})
    assert both.status_code == 400 and b"not both" in both.content and b'value="new-one"' in both.content
    taken = client.post(url, {"slug": fall["course"].slug, "shift_days": "7", "copy": ""})
    assert taken.status_code == 400 and b"exists already" in taken.content
    far = client.post(url, {"slug": "far-one", "shift_days": "99999", "copy": ""})
    assert far.status_code == 400 and not Course.objects.filter(slug="far-one").exists()


@override_settings(GRADER_COURSE_CREATORS="instructors")
def test_the_api_copies_and_answers_clear_400s(fall: Any, make_user: Any) -> None:
    client = api(fall["people"]["instructor"])
    url = f"/api/v1/courses/{fall['course'].slug}/copy/"
    new = f"api-{fall['tag']}"
    made = client.post(url, {"slug": new, "shift_days": 7}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["slug"] == new and body["shift_days"] == 7 and body["staff"] == 2
    assert body["assignments"] == {fall["live"].slug: f"{fall['live'].slug}-{new}"}
    assert Assignment.objects.get(slug=f"{fall['live'].slug}-{new}").due_at == fall["live"].due_at + timedelta(days=7)
    for bad, needle in [({"slug": new}, "exists already"), ({"slug": "a b"}, "slug"),
                        ({"slug": "x1", "shift_days": "soon"}, "shift_days"),
                        ({"slug": "x2", "shift_days": 1, "start": "2027-01-01"}, "not both"), ([1], "body")]:
        refused = client.post(url, bad, format="json")
        assert refused.status_code == 400 and needle in str(refused.json()["errors"]), (bad, refused.content)
    assert api(fall["people"]["student"]).post(url, {"slug": "s1"}, format="json").status_code == 403
    assert api(make_user("instructor")).post(url, {"slug": "s2"}, format="json").status_code == 404
    with override_settings(GRADER_COURSE_CREATORS="staff"):
        assert client.post(url, {"slug": "s3"}, format="json").status_code == 403


def test_the_copy_endpoint_is_in_the_openapi_schema(instructor: Any) -> None:
    schema = api(instructor).get("/api/v1/schema/?format=json")
    assert schema.status_code == 200
    assert "/api/v1/courses/{course}/copy/" in schema.json()["paths"]


@override_settings(GRADER_COURSE_CREATORS="instructors")
def test_a_ta_who_may_create_courses_still_may_not_copy_one_they_assist_in(fall: Any, make_user: Any) -> None:
    """The copy holds the references and answer keys and makes the copier its instructor: only those who
    may author the source course may copy it."""
    ta = fall["people"]["ta"]
    membership_set(user=ta.user, course=Course.objects.create(slug=f"own-{fall['tag']}", title="Own"),
                   role="instructor")  # an instructor elsewhere, so a course creator under "instructors"
    course = fall["course"].slug
    client = logged_in(ta)
    assert "/copy/" not in client.get(f"/staff/courses/{course}/").content.decode()
    assert client.get(f"/staff/courses/{course}/copy/").status_code in (403, 404)
    assert client.post(f"/staff/courses/{course}/copy/", {"slug": f"x-{fall['tag']}", "copy": ""}).status_code \
        in (403, 404)
    answer = api(ta).post(f"/api/v1/courses/{course}/copy/", {"slug": f"y-{fall['tag']}"}, format="json")
    assert answer.status_code in (403, 404)
    assert not Course.objects.filter(slug__in=[f"x-{fall['tag']}", f"y-{fall['tag']}"]).exists()
