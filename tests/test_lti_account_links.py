"""LMS accounts linked to roster accounts: at launch when the course allows it, and by an instructor's hand;
never a staff account, never an account of another course, never one already linked to someone else."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from lti_tool.models import LtiUser

from assignments.models import Course, LmsPerson, Membership
from assignments.services import course_demo
from lti.account_links import linking_allow
from tests.lti_platform.inprocess import Platform
from tests.lti_platform.launches import INSTRUCTOR, LEARNER

User = get_user_model()


@pytest.fixture
def course() -> Course:
    return course_demo()  # holds the seed catalog, so a student's launch opens an assignment


@pytest.fixture
def platform(course: Course) -> Platform:
    return Platform().register(course=course.slug, contexts=("ctx-1",))


def _member(course: Course, *, role: str = "student", email: str = "", **flags: bool) -> Any:
    user = User.objects.create_user(username=f"r-{uuid.uuid4().hex[:8]}", email=email, password="pw", **flags)
    Membership.objects.create(user=user, course=course, role=role)
    return user


def _launch(platform: Platform, *, user_id: str, email: str = "", instructor: bool = False) -> Any:
    """A launch of this LMS person; returns the account it logged in as."""
    client = Client()
    state, nonce = platform.login(client, user_id=user_id)
    body = platform.body(nonce=nonce, user_id=user_id, roles=(INSTRUCTOR,) if instructor else (LEARNER,),
                         custom={"assignment": "positive-gradient"})
    if email:
        body["email"] = email
    reply = platform.post(client, state=state, header=platform.header(), body=body)
    assert reply.status_code == 302, reply.content[:300]
    return User.objects.get(pk=client.session["_auth_user_id"])


@pytest.mark.django_db
def test_by_default_a_launch_makes_an_lms_account_even_when_the_email_matches(course: Course,
                                                                                platform: Platform) -> None:
    roster = _member(course, email="ada@school.example")
    arrived = _launch(platform, user_id="lms-ada", email="ada@school.example")
    assert arrived != roster and arrived.username.startswith("lti-")


@pytest.mark.django_db
def test_when_allowed_a_launch_with_the_roster_email_uses_that_account(course: Course, platform: Platform) -> None:
    roster = _member(course, email="Ada@School.example")
    linking_allow(course=course, allowed=True)
    assert _launch(platform, user_id="lms-ada", email="ada@school.example") == roster
    assert LtiUser.objects.get(sub="lms-ada").auth_user == roster
    assert roster.lms_person.lms_id == "lms-ada"  # the LMS id is kept with it, for the exports
    assert _launch(platform, user_id="lms-ada") == roster  # and every later launch


@pytest.mark.django_db
def test_when_allowed_a_launch_matches_the_lms_id_stored_with_a_roster_account(course: Course,
                                                                                 platform: Platform) -> None:
    roster = _member(course)
    LmsPerson.objects.create(user=roster, lms_id="lms-bo")
    linking_allow(course=course, allowed=True)
    assert _launch(platform, user_id="lms-bo") == roster


@pytest.mark.django_db
@pytest.mark.parametrize("case", ["site staff", "course TA", "in another course", "linked to someone else",
                                  "two accounts with that email", "instructor launch"])
def test_a_launch_never_takes_an_account_it_must_not(course: Course, platform: Platform, case: str) -> None:
    email = f"{case.replace(' ', '')}@school.example"
    linking_allow(course=course, allowed=True)
    roster = _member(course, email=email, is_staff=case == "site staff",
                     role="ta" if case == "course TA" else "student")
    if case == "in another course":
        Membership.objects.create(user=roster, course=Course.objects.create(slug=f"o-{uuid.uuid4().hex[:6]}",
                                                                            title="Other"))
    if case == "linked to someone else":
        assert _launch(platform, user_id="first-person", email=email) == roster
    if case == "two accounts with that email":
        _member(course, email=email)
    arrived = _launch(platform, user_id="lms-x", email=email, instructor=case == "instructor launch")
    assert arrived != roster and arrived.username.startswith("lti-")


def _page(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_an_instructor_links_an_lms_account_by_hand_and_the_next_launch_uses_it(course: Course,
                                                                               platform: Platform) -> None:
    lms_account = _launch(platform, user_id="lms-cy", email="cy@lms.example")
    roster = _member(course, email="cy@school.example")
    teacher = _page(_member(course, role="instructor"))
    url = f"/lti/courses/{course.slug}/"
    page = teacher.get(url).content.decode()
    assert f'<option value="{roster.pk}">' in page and f'<option value="{lms_account.pk}">' in page
    done = teacher.post(url, {"accounts": "link", "lms_account": lms_account.pk, "roster_account": roster.pk},
                        follow=True)
    assert "is used from the LMS&#x27;s next launch on" in done.content.decode()
    assert not Membership.objects.filter(user=lms_account, course=course).exists()  # no duplicate student
    assert _launch(platform, user_id="lms-cy") == roster


@pytest.mark.django_db
def test_linking_by_hand_is_refused_for_tas_other_courses_and_accounts_that_cannot_be_linked(
        course: Course, platform: Platform) -> None:
    lms_account = _launch(platform, user_id="lms-di")
    staff_roster = _member(course, is_staff=True)
    url = f"/lti/courses/{course.slug}/"
    link = {"accounts": "link", "lms_account": lms_account.pk, "roster_account": staff_roster.pk}
    refused = _page(_member(course, role="instructor")).post(url, link)
    assert refused.status_code == 400 and b"cannot be linked" in refused.content
    assert _page(_member(course, role="ta")).post(url, link).status_code == 403
    other = Course.objects.create(slug=f"o-{uuid.uuid4().hex[:6]}", title="Other")
    outsider = _member(other, role="instructor")
    elsewhere = _member(other)
    assert _page(outsider).post(url, {**link, "roster_account": elsewhere.pk}).status_code == 404
    own = _page(outsider).post(f"/lti/courses/{other.slug}/", {**link, "roster_account": elsewhere.pk})
    assert own.status_code == 400 and b"not a student of this course" in own.content
    assert LtiUser.objects.get(sub="lms-di").auth_user == lms_account


@pytest.mark.django_db
def test_an_instructor_turns_launch_linking_on_and_a_ta_cannot(course: Course) -> None:
    url = f"/lti/courses/{course.slug}/"
    assert _page(_member(course, role="ta")).post(url, {"accounts": "setting", "link_roster_accounts": "on"}
                                                  ).status_code == 403
    teacher = _page(_member(course, role="instructor"))
    assert b"checked" not in teacher.get(url).content.split(b'name="link_roster_accounts"')[1][:20]
    assert teacher.post(url, {"accounts": "setting", "link_roster_accounts": "on"}).status_code == 302
    assert b" checked" in teacher.get(url).content.split(b'name="link_roster_accounts"')[1][:20]


@pytest.mark.django_db
def test_an_lms_person_who_teaches_or_studies_elsewhere_is_not_an_instructors_to_link(
        course: Course, platform: Platform) -> None:
    """Linking moves every launch of the LMS person to the roster account, whose password its instructor may
    know: a person in another course of the tool (here teaching it) must not be moved."""
    lms_account = _launch(platform, user_id="lms-ed")
    elsewhere = Course.objects.create(slug=f"y-{uuid.uuid4().hex[:6]}", title="Y")
    Membership.objects.create(user=lms_account, course=elsewhere, role="instructor")
    roster = _member(course)
    teacher = _page(_member(course, role="instructor"))
    url = f"/lti/courses/{course.slug}/"
    assert f'<option value="{lms_account.pk}">' not in teacher.get(url).content.decode()
    refused = teacher.post(url, {"accounts": "link", "lms_account": lms_account.pk, "roster_account": roster.pk})
    assert refused.status_code == 400 and LtiUser.objects.get(sub="lms-ed").auth_user == lms_account


@pytest.mark.django_db
def test_a_linked_roster_account_takes_no_teaching_role_from_the_lms(course: Course, platform: Platform) -> None:
    lms_account = _launch(platform, user_id="lms-fay")
    roster = _member(course)
    link = {"accounts": "link", "lms_account": lms_account.pk, "roster_account": roster.pk}
    _page(_member(course, role="instructor")).post(f"/lti/courses/{course.slug}/", link)
    assert _launch(platform, user_id="lms-fay") == roster
    client = Client()
    state, nonce = platform.login(client, user_id="lms-fay")
    body = platform.body(nonce=nonce, user_id="lms-fay", roles=(INSTRUCTOR,),
                         custom={"assignment": "positive-gradient"})
    reply = platform.post(client, state=state, header=platform.header(), body=body)
    assert reply.status_code == 403 and b"student account of this tool" in reply.content
    assert not Membership.objects.filter(user=roster).exclude(role="student").exists()


@pytest.mark.django_db
def test_the_course_lms_page_has_its_title_and_the_accounts_section_once(course: Course) -> None:
    import re

    page = _page(_member(course, role="instructor")).get(f"/lti/courses/{course.slug}/").content.decode()
    title = re.search(r"<title>(.*?)</title>", page, re.S)
    assert title is not None and "<" not in title.group(1) and f"LMS sync — {course.title}" in title.group(1)
    assert page.count('id="accounts"') == 1
