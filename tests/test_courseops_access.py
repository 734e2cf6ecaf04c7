"""Course operations are scoped: staff of the course get them, its students 403, other courses'
staff 404 (pages and API); the staff API's shapes and schema; bulk enrolment by CSV."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from assignments.models import Membership
from assignments.services import membership_set
from courseops.models import Regrade
from courseops.regrades import regrade_preview_compute
from courseops.roster import roster_apply, roster_plan
from courseops.roster_csv import RosterFileError
from tests.clients import api, logged_in
from tests.courseops_known import KnownCourse, known_course_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def known(django_db_setup: None) -> KnownCourse:
    return known_course_build()


@pytest.fixture
def staff(known: KnownCourse, make_user: Any) -> dict[str, Any]:
    """An instructor and a TA of the known course, and an instructor of the demo course only."""
    people = {"instructor": make_user("instructor"), "ta": make_user("ta"), "outsider": make_user("instructor"),
              "student": make_user("student")}
    membership_set(user=people["instructor"].user, course=known.course, role="instructor")
    membership_set(user=people["ta"].user, course=known.course, role="ta")
    membership_set(user=people["student"].user, course=known.course, role="student")
    return people


def pages(known: KnownCourse) -> list[str]:
    sub = known.submissions[("bob", "a", 1)].id
    course, slug = known.course.slug, known.a.slug
    return [f"/staff/courses/{course}/roster/", f"/staff/courses/{course}/gradebook/",
            f"/staff/courses/{course}/gradebook/?format=csv",
            f"/staff/courses/{course}/students/{known.users['bob'].username}/",
            f"/staff/assignments/{slug}/submissions/", f"/staff/assignments/{slug}/submissions/?part=x.grad&kind=x",
            f"/staff/assignments/{slug}/analytics/", f"/staff/assignments/{slug}/analytics/?format=csv",
            f"/staff/assignments/{slug}/regrades/", f"/staff/submissions/{sub}/"]


def apis(known: KnownCourse) -> list[str]:
    course, slug = known.course.slug, known.a.slug
    return [f"/api/v1/courses/{course}/gradebook/", f"/api/v1/courses/{course}/gradebook/?format=csv",
            f"/api/v1/assignments/{slug}/analytics/"]


def test_staff_get_every_page_students_403_and_other_courses_staff_404(known: KnownCourse, staff: Any) -> None:
    for who, expected in [("instructor", 200), ("ta", 200), ("student", 403), ("outsider", 404)]:
        client = logged_in(staff[who])
        assert {url: client.get(url).status_code for url in pages(known)} == dict.fromkeys(pages(known), expected)
        token = api(staff[who])
        assert {url: token.get(url).status_code for url in apis(known)} == dict.fromkeys(apis(known), expected)
    for who, expected in [("student", 403), ("outsider", 404), ("ta", 403)]:  # regrades and roster: instructors
        assert api(staff[who]).post(f"/api/v1/assignments/{known.a.slug}/regrade/", {"dry_run": True},
                                    format="json").status_code == expected
        assert logged_in(staff[who]).post(f"/staff/assignments/{known.a.slug}/regrades/").status_code == expected
    assert api(staff["student"]).get("/api/v1/courses/").status_code == 403
    override = f"/staff/submissions/{known.submissions[('bob', 'a', 1)].id}/override/"
    form = {"part": "x.grad", "score": 1, "comment": "x"}
    assert logged_in(staff["outsider"]).post(override, form).status_code == 404
    assert logged_in(staff["student"]).post(override, form).status_code == 403


def test_the_staff_api_gives_courses_gradebook_submissions_and_analytics(known: KnownCourse, staff: Any) -> None:
    client = api(staff["ta"])
    assert {"slug": known.course.slug, "title": known.course.title, "role": "ta"} in client.get(
        "/api/v1/courses/").json()
    book = client.get(f"/api/v1/courses/{known.course.slug}/gradebook/").json()
    alice = next(s for s in book["students"] if s["username"] == known.users["alice"].username)
    assert alice["scores"][known.b.slug] | {"submission": None} == {
        "score": 0.5, "attempts": 2, "late": True, "overridden": False, "regraded": False, "submission": None,
        "extended": False,
        "extension": None}
    text = client.get(f"/api/v1/courses/{known.course.slug}/gradebook/?format=csv").content.decode()
    rows = list(csv.reader(io.StringIO(text)))
    students = [*(u.username for u in known.users.values()), staff["student"].user.username]
    assert rows[0][0] == "username" and [r[0] for r in rows[1:]] == sorted(students)

    wrong = client.get(f"/api/v1/assignments/{known.a.slug}/submissions/?part=x.grad&kind=missing_path").json()
    assert sorted(s["answers"]["x.grad"] for s in wrong) == ["3", "4", "4", "4"]
    assert {s["student"] for s in client.get(
        f"/api/v1/assignments/{known.a.slug}/submissions/?student={known.users['bob'].username}").json()} == {
        known.users["bob"].username}
    x = client.get(f"/api/v1/assignments/{known.a.slug}/analytics/").json()["parts"]["x.grad"]
    assert (x["attempts"], x["wrong"], x["kinds"]["missing_path"]) == (8, 6, 4)
    assert x["paths"][0]["path"] == ["x", "mul", "add", "z"] and x["paths"][0]["count"] == 4


def test_a_student_listing_submissions_sees_only_their_own(known: KnownCourse) -> None:
    bob = type("P", (), {"user": known.users["bob"]})()
    listed = logged_in(bob).get(f"/api/v1/assignments/{known.a.slug}/submissions/?student=alice").json()
    assert len(listed) == 3 and all("student" not in s for s in listed)


def test_the_regrade_api_previews_then_applies_the_preview(known: KnownCourse, staff: Any) -> None:
    client = api(staff["instructor"])
    known.a.parts.filter(key="x.grad").update(rel_tol=1e-3)
    started = client.post(f"/api/v1/assignments/{known.a.slug}/regrade/", {"dry_run": True}, format="json")
    assert started.status_code == 202 and started.json()["status"] == "previewing"
    regrade_preview_compute(regrade_id=started.json()["id"])  # the worker's job (the queue test runs a real one)
    done = client.get(f"/api/v1/assignments/{known.a.slug}/regrade/{started.json()['id']}/").json()
    erin = known.submissions[("erin", "a", 1)].id
    assert [(c["submission"], c["old"], c["new"]) for c in done["changes"] if c["score_changed"]] == [(erin, 0, 1)]
    page = logged_in(staff["instructor"]).get(f"/staff/assignments/{known.a.slug}/regrades/{done['id']}/")
    text = page.content.decode()
    assert "<strong>1</strong> score changes of 8" in text and known.users["erin"].username in text
    assert "Apply this regrade" in text
    assert client.post(f"/api/v1/assignments/{known.a.slug}/regrade/", {"dry_run": False},
                       format="json").status_code == 400
    applying = client.post(f"/api/v1/assignments/{known.a.slug}/regrade/",
                           {"dry_run": False, "regrade": done["id"]}, format="json")
    assert applying.status_code == 202 and Regrade.objects.get(id=done["id"]).status == "applying"


def test_the_schema_documents_the_staff_api(client: Any) -> None:
    paths = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    for path in ["/api/v1/courses/", "/api/v1/courses/{course}/gradebook/", "/api/v1/assignments/{slug}/analytics/",
                 "/api/v1/assignments/{slug}/regrade/", "/api/v1/assignments/{slug}/submissions/"]:
        assert path in paths
    assert "kind" in {p["name"] for p in paths["/api/v1/assignments/{slug}/submissions/"]["get"]["parameters"]}


ROSTER = b"""username,email,name,role,section
newbie,newbie@example.org,New Bie,student,T1
{alice},hijack@example.org,Mallory,student,T2
ta-new,,Tia Assist,ta,
"""


def test_a_roster_with_bad_lines_lists_each_and_enrols_nobody(known: KnownCourse, staff: Any) -> None:
    bad = b"username,email,role\nok-1,ok@example.org,student\nbad name,,student\nok-1,,student\nx2,nope,student\n" \
          b"x3,,teacher\n"
    plan = roster_plan(course=known.course, data=bad, by=staff["instructor"].user)
    assert [(e.line, e.message.split(" ")[0]) for e in plan.errors] == [
        (3, "username"), (4, "username"), (5, "email"), (6, "role")]
    assert "already on line 2" in plan.errors[1].message
    roster_apply(course=known.course, data=bad, by=staff["instructor"].user)
    assert not get_user_model().objects.filter(username="ok-1").exists()
    with pytest.raises(RosterFileError):
        roster_plan(course=known.course, data=b"email,role\nx@example.org,student\n", by=staff["instructor"].user)
    with pytest.raises(RosterFileError):
        roster_plan(course=known.course, data=b"\xff\xfeusername\n", by=staff["instructor"].user)


def test_a_roster_enrols_new_people_moves_sections_and_keeps_existing_accounts(known: KnownCourse,
                                                                               staff: Any) -> None:
    alice = known.users["alice"]
    data = ROSTER.replace(b"{alice}", alice.username.encode())
    plan = roster_plan(course=known.course, data=data, by=staff["instructor"].user)
    assert [(p.line.username, p.action) for p in plan.lines] == [
        ("newbie", "create"), (alice.username, "update"), ("ta-new", "create")]
    section = Membership.objects.get(user=alice, course=known.course).section
    assert plan.lines[1].before == f"section {section or 'none'} → T2"  # said only "(was student)"
    assert not get_user_model().objects.filter(username="newbie").exists()  # the dry run wrote nothing
    response = logged_in(staff["instructor"]).post(f"/staff/courses/{known.course.slug}/roster/",
                                                   {"apply": "1", "csv": data.decode()})
    assert response.status_code == 302
    assert Membership.objects.get(user__username="newbie", course=known.course).section == "T1"
    assert Membership.objects.get(user__username="ta-new", course=known.course).role == "ta"
    alice.refresh_from_db()
    assert alice.email == "alice@example.org"  # a course's file never edits an existing account
    assert Membership.objects.get(user=alice, course=known.course).section == "T2"
    assert logged_in(staff["ta"]).post(f"/staff/courses/{known.course.slug}/roster/",
                                       {"apply": "1", "csv": data.decode()}).status_code == 403
