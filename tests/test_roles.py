"""Course roles and scoping: staff of course A see nothing of course B; students see no staff page."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404

from assignments.access import (
    assignment_for_staff_or_404,
    course_for_staff_or_404,
    course_role,
    courses_for,
    staff_courses,
)
from assignments.models import Assignment, Course, Membership
from assignments.services import course_demo, membership_set
from tests.clients import logged_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def course_b() -> Course:
    course = Course.objects.create(slug=f"other-{uuid.uuid4().hex[:6]}", title="Another course")
    Assignment.objects.create(course=course, slug=f"b-{uuid.uuid4().hex[:6]}", title="B's secret",
                              statement="s", reference_program="x = 1")
    return course


@pytest.fixture
def ta(make_user: Callable[..., Any]) -> Any:
    return make_user("ta")


def staff_pages(course: Course) -> list[str]:
    """Every staff page of a course that a TA may read."""
    slug = course.assignments.first().slug  # type: ignore[union-attr]
    return [f"/staff/courses/{course.slug}/", f"/staff/assignments/{slug}/submissions/"]


def authoring_pages(course: Course) -> list[tuple[str, str]]:
    """Every instructor-only page: (method, url)."""
    slug = course.assignments.first().slug  # type: ignore[union-attr]
    base = f"/staff/courses/{course.slug}"
    pages = [("get", f"{base}/assignments/new/"), ("post", f"{base}/staff/"), ("post", f"{base}/import/")]
    pages += [("get", f"/staff/assignments/{slug}/{page}/") for page in ("edit", "publish", "extensions")]
    # the catalog files hold the answer key (reference, expected values): authoring, as in the authoring API
    pages += [("get", f"{base}/export.zip"), ("get", f"/staff/assignments/{slug}/export.toml")]
    pages += [("post", f"/staff/assignments/{slug}/{page}/") for page in ("preview", "duplicate", "delete", "restore")]
    return pages


def test_every_authoring_page_is_404_for_other_courses_and_403_for_tas_and_students(
    instructor: Any, ta: Any, student: Any, course_b: Course
) -> None:
    for method, url in authoring_pages(course_b):
        for person in (instructor, ta, student):
            assert getattr(logged_in(person), method)(url).status_code == 404, (person, url)
    for method, url in authoring_pages(course_demo()):
        for person in (ta, student):
            assert getattr(logged_in(person), method)(url).status_code == 403, (person, url)
        assert "This page is for the course&#x27;s instructors." in getattr(logged_in(ta), method)(url).content.decode()
    assert Assignment.objects.filter(slug=course_b.assignments.get().slug).exists()  # the delete did nothing


def test_staff_of_course_a_get_404_on_every_page_of_course_b(instructor: Any, ta: Any, course_b: Course) -> None:
    for person in (instructor, ta):
        client = logged_in(person)
        for url in staff_pages(course_b):
            assert client.get(url).status_code == 404, url
        with pytest.raises(Http404):
            assignment_for_staff_or_404(user=person.user, slug=course_b.assignments.get().slug)


def test_a_missing_course_and_a_foreign_course_look_the_same(instructor: Any, course_b: Course) -> None:
    client = logged_in(instructor)
    foreign = client.get(f"/staff/courses/{course_b.slug}/")
    missing = client.get("/staff/courses/no-such-course/")
    assert foreign.status_code == missing.status_code == 404
    assert course_b.title.encode() not in foreign.content


def test_a_student_gets_403_on_their_courses_staff_pages_and_404_elsewhere(student: Any, course_b: Course) -> None:
    client = logged_in(student)
    assert client.get("/staff/").status_code == 403
    for url in staff_pages(course_demo()):
        assert client.get(url).status_code == 403, url
    for url in staff_pages(course_b):
        assert client.get(url).status_code == 404, url


def test_anonymous_visitors_are_sent_to_log_in() -> None:
    from django.test import Client

    response = Client().get("/staff/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_staff_home_lists_my_courses_with_my_role_and_no_other(instructor: Any, ta: Any, course_b: Course) -> None:
    membership_set(user=ta.user, course=course_b, role=Membership.Role.INSTRUCTOR)
    page = logged_in(instructor).get("/staff/").content.decode()
    assert course_demo().title in page and "Instructor" in page
    assert course_b.title not in page
    page = logged_in(ta).get("/staff/").content.decode()
    assert ">TA<" in page and course_b.title in page


def test_a_ta_may_read_but_not_author(ta: Any) -> None:
    demo = course_demo()
    assert course_role(user=ta.user, course=demo) == "ta"
    assert course_for_staff_or_404(user=ta.user, slug=demo.slug) == demo
    with pytest.raises(PermissionDenied):
        course_for_staff_or_404(user=ta.user, slug=demo.slug, authoring=True)
    assert list(staff_courses(user=ta.user, authoring=True)) == []
    assert list(staff_courses(user=ta.user)) == [demo]


def test_courses_for_lists_every_role_but_staff_courses_only_staff_roles(student: Any) -> None:
    assert list(courses_for(user=student.user)) == [course_demo()]
    assert list(staff_courses(user=student.user)) == []


def test_instructors_are_not_django_staff(instructor: Any) -> None:
    instructor.user.refresh_from_db()
    assert not instructor.user.is_staff
    assert logged_in(instructor).get("/admin/").status_code == 302  # the admin's own login, not the admin


def test_the_header_links_to_the_staff_pages_for_course_staff_only(instructor: Any, ta: Any, student: Any,
                                                                   make_user: Callable[..., Any]) -> None:
    link = '<a class="staff-link" href="/staff/">Staff</a>'
    assert link in logged_in(instructor).get("/").content.decode()
    assert link in logged_in(ta).get("/assignments/visual-walkthrough/").content.decode()
    assert link not in logged_in(student).get("/").content.decode()
    # Staff of another course only: still staff somewhere, so the link shows on every page.
    elsewhere = make_user("student")
    Membership.objects.filter(user=elsewhere.user).delete()
    course = Course.objects.create(slug=f"else-{uuid.uuid4().hex[:6]}", title="Elsewhere")
    membership_set(user=elsewhere.user, course=course, role=Membership.Role.TA)
    assert link in logged_in(elsewhere).get("/").content.decode()
