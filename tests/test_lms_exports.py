"""Gradebook files an LMS imports: Canvas's gradebook CSV (its documented columns Student, ID, SIS User
ID, SIS Login ID, Section, one column per assignment, and the Points Possible row right after the
header) and Moodle's CSV grade import (identifier columns, then one column per grade item); the LMS's
person id kept at an LTI launch and a roster sync, and LTI students shown by their names."""

from __future__ import annotations

import csv
import io
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from lti_tool.models import LtiContext, LtiDeployment, LtiRegistration, LtiUser

from assignments.models import Assignment, Course, LmsPerson, Membership, Part
from assignments.services import lms_person_set, membership_set
from courseops.gradebook import CANVAS_COLUMNS, gradebook_canvas_csv, gradebook_moodle_csv, gradebook_read
from grader.models import Result, Submission
from lti import launch as lti_launch_module
from lti.launch import LIS_CLAIM, launch_accept
from lti.models import ContextCourse
from lti.nrps_sync import Listing, _apply
from tests.clients import api, logged_in

pytestmark = pytest.mark.django_db
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
# Canvas's gradebook import (Canvas Instructor Guide, "How do I import grades in the Gradebook?"): these
# columns first, in this order, then the assignments; the second line is the "Points Possible" row.
CANVAS_DOCUMENTED = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _graded(student: Any, assignment: Assignment, score: float, attempt: int = 1) -> Submission:
    submission = Submission.objects.create(student=student, assignment=assignment, status=Submission.Status.GRADED,
                                           attempt=attempt, answers={"x.grad": "1"})
    Result.objects.create(submission=submission, score=score, max_score=2.0, document={"parts": []})
    return submission


@pytest.fixture
def course(django_db_setup: None, make_user: Any) -> dict[str, Any]:
    """Two assignments (2 and 3 points); a roster student, an LTI student with a SIS id, one with no name."""
    tag = uuid.uuid4().hex[:6]
    found = Course.objects.create(slug=f"lms-{tag}", title="LMS course")
    now = timezone.now()
    first = Assignment.objects.create(course=found, slug=f"backprop-{tag}", title="Backprop basics", statement="s",
                                      reference_program="z = 1", due_at=now + timedelta(days=1))
    second = Assignment.objects.create(course=found, slug=f"chain-{tag}", title="Chain rule", statement="s",
                                       reference_program="z = 1", due_at=now + timedelta(days=2))
    Part.objects.create(assignment=first, key="x.grad", points=2)
    Part.objects.create(assignment=second, key="x.grad", points=1)
    Part.objects.create(assignment=second, key="y.grad", order=1, points=2)
    users = get_user_model().objects
    alice = users.create(username=f"alice-{tag}", first_name="Alice", last_name="Smith", email="alice@school.edu")
    ada = users.create(username=f"lti-{uuid.uuid4().hex[:20]}", first_name="Ada", last_name="Lovelace",
                       email="ada@school.edu")
    lms_person_set(user=ada, lms_id="platform-sub-ada", sis_id="SIS-42")
    nameless = users.create(username=f"=cmd-{tag}", email="")
    for user, section in [(alice, "A"), (ada, "B"), (nameless, "")]:
        Membership.objects.create(user=user, course=found, section=section)
    _graded(alice, first, 1.5)
    _graded(ada, first, 2.0)
    _graded(ada, second, 3.0)
    instructor = make_user("instructor")
    membership_set(user=instructor.user, course=found, role="instructor")
    return {"course": found, "first": first, "second": second, "alice": alice, "ada": ada, "nameless": nameless,
            "instructor": instructor}


def test_the_canvas_csv_has_canvas_documented_columns_and_the_points_possible_row(course: Any) -> None:
    rows = _rows(gradebook_canvas_csv(gradebook_read(course=course["course"])))
    assert list(CANVAS_COLUMNS) == CANVAS_DOCUMENTED
    assert rows[0] == [*CANVAS_DOCUMENTED, "Backprop basics", "Chain rule"]  # no total: Canvas would add it
    assert rows[1] == ["Points Possible", "", "", "", "", "2", "3"]
    by_student = {row[0]: row for row in rows[2:]}
    assert by_student["Smith, Alice"] == ["Smith, Alice", "", "", course["alice"].username, "A", "1.5", ""]
    # the LTI student: by name, the LMS's person id as SIS User ID, no login of ours
    assert by_student["Lovelace, Ada"] == ["Lovelace, Ada", "", "SIS-42", "", "B", "2", "3"]
    nameless = f"'{course['nameless'].username}"  # a cell starting with = is quoted against formulas
    assert by_student[nameless] == [nameless, "", "", nameless, "", "", ""]
    assert len(rows) == 2 + 3 and all(len(row) == 7 for row in rows)


def test_the_moodle_csv_has_identifier_columns_then_one_column_per_grade_item(course: Any) -> None:
    rows = _rows(gradebook_moodle_csv(gradebook_read(course=course["course"])))
    assert rows[0] == ["Email address", "ID number", "Username", "First name", "Last name", "Backprop basics",
                       "Chain rule"]
    by_email = {row[0]: row for row in rows[1:]}
    assert by_email["alice@school.edu"] == ["alice@school.edu", "", course["alice"].username, "Alice", "Smith",
                                            "1.5", ""]
    assert by_email["ada@school.edu"] == ["ada@school.edu", "SIS-42", "", "Ada", "Lovelace", "2", "3"]
    assert "Points Possible" not in {row[0] for row in rows}
    assert len(rows) == 1 + 3


def test_a_roster_account_the_lms_knows_too_keeps_its_login_beside_the_sis_id(course: Any) -> None:
    lms_person_set(user=course["alice"], lms_id="platform-sub-alice", sis_id="SIS-1")
    rows = {row[0]: row for row in _rows(gradebook_canvas_csv(gradebook_read(course=course["course"])))[2:]}
    assert rows["Smith, Alice"] == ["Smith, Alice", "", "SIS-1", course["alice"].username, "A", "1.5", ""]


def test_two_assignments_with_one_title_get_their_slugs(course: Any) -> None:
    Assignment.objects.filter(id=course["second"].id).update(title="Backprop basics")
    header = _rows(gradebook_canvas_csv(gradebook_read(course=course["course"])))[0]
    assert header[5:] == [f"Backprop basics ({course['first'].slug})", f"Backprop basics ({course['second'].slug})"]


def test_the_staff_api_and_the_gradebook_page_give_each_format(course: Any) -> None:
    slug = course["course"].slug
    client = api(course["instructor"])
    for export, first_cell in [("canvas", "Student"), ("moodle", "Email address"), ("csv", "username")]:
        answer = client.get(f"/api/v1/courses/{slug}/gradebook/?format={export}")
        assert answer.status_code == 200 and answer["Content-Type"].startswith("text/csv"), export
        assert _rows(answer.content.decode())[0][0] == first_cell
        suffix = "" if export == "csv" else f"-{export}"
        assert answer["Content-Disposition"] == f'attachment; filename="{slug}-gradebook{suffix}.csv"'
    assert _rows(client.get(f"/api/v1/courses/{slug}/gradebook/?format=canvas&section=B").content.decode())[2][0] == \
        "Lovelace, Ada"
    browser = logged_in(course["instructor"])
    page = browser.get(f"/staff/courses/{slug}/gradebook/")
    text = page.content.decode()
    assert '<option value="canvas">' in text and '<option value="moodle">' in text
    assert f'{course["ada"].username}/">Ada Lovelace</a>' in text  # by name, not lti-…
    assert f'>{course["ada"].username}<' not in text
    assert f'Alice Smith <span class="muted">{course["alice"].username}</span>' in text
    download = browser.get(f"/staff/courses/{slug}/gradebook/", {"format": "canvas", "section": "", "q": ""})
    assert download.status_code == 200 and _rows(download.content.decode())[1][0] == "Points Possible"
    students = {s["name"]: s for s in client.get(f"/api/v1/courses/{slug}/gradebook/").json()["students"]}
    assert (students["Ada Lovelace"]["sis_id"], students["Alice Smith"]["sis_id"]) == ("SIS-42", "")
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    formats = next(p for p in schema["paths"]["/api/v1/courses/{course}/gradebook/"]["get"]["parameters"]
                   if p["name"] == "format")
    assert set(formats["schema"]["enum"]) == {"json", "csv", "canvas", "moodle"}


def _platform() -> tuple[LtiRegistration, LtiDeployment, LtiContext]:
    tag = uuid.uuid4().hex[:8]
    registration = LtiRegistration.objects.create(name="lms", issuer=f"https://lms-{tag}.example", client_id="c",
                                                  auth_url="https://lms.example/auth",
                                                  token_url="https://lms.example/token",
                                                  keyset_url="https://lms.example/jwks")
    deployment = LtiDeployment.objects.create(registration=registration, deployment_id="d", is_active=True)
    context = LtiContext.objects.create(deployment=deployment, id_on_platform=f"ctx-{tag}", title="LMS course")
    return registration, deployment, context


class _Launch:
    """What launch_accept reads of a validated launch (django-lti's own rows are synced beforehand)."""

    is_deep_link_launch = True
    resource_link = None

    def __init__(self, user: LtiUser, context: LtiContext, claims: dict[str, Any]) -> None:
        self.user, self.context, self.claims = user, context, claims
        self.roles_claim = [MEMBERSHIP + "Instructor"]

    def get_claim(self, name: str) -> Any:
        return self.claims.get(name)


def test_a_launch_keeps_the_lms_person_id_and_a_later_launch_without_it_keeps_it(monkeypatch: Any) -> None:
    monkeypatch.setattr(lti_launch_module, "sync_data_from_launch", lambda launch: None)
    registration, _, context = _platform()
    lti_user = LtiUser.objects.create(registration=registration, sub="sub-grace", given_name="Grace",
                                      family_name="Hopper")
    arrival = launch_accept(lti_launch=_Launch(lti_user, context, {LIS_CLAIM: {"person_sourcedid": "SIS-7"}}))
    person = LmsPerson.objects.get(user=arrival.user)
    assert (person.lms_id, person.sis_id) == ("sub-grace", "SIS-7")
    assert arrival.user.username.startswith("lti-") and arrival.user.get_full_name() == "Grace Hopper"
    launch_accept(lti_launch=_Launch(lti_user, context, {}))  # this launch carries no LIS claim
    assert LmsPerson.objects.get(user=arrival.user).sis_id == "SIS-7"
    launch_accept(lti_launch=_Launch(lti_user, context, {LIS_CLAIM: {"person_sourcedid": ["not", "text"]}}))
    assert LmsPerson.objects.get(user=arrival.user).sis_id == "SIS-7"
    launch_accept(lti_launch=_Launch(lti_user, context, {LIS_CLAIM: {"person_sourcedid": " SIS-8 "}}))
    assert LmsPerson.objects.get(user=arrival.user).sis_id == "SIS-8"


def test_a_roster_sync_keeps_each_members_lms_person_id_for_the_canvas_export() -> None:
    _, _, context = _platform()
    found = Course.objects.create(slug=f"nrps-{uuid.uuid4().hex[:6]}", title="Synced")
    link = ContextCourse.objects.create(context=context, course=found)
    members = [
        {"user_id": "sub-1", "status": "Active", "roles": ["Learner"], "given_name": "Katherine",
         "family_name": "Johnson", "name": "Katherine Johnson", "email": "kj@school.edu",
         "lis_person_sourcedid": "SIS-100"},
        {"user_id": "sub-2", "status": "Active", "roles": ["Learner"], "name": "Dorothy Vaughan"},
    ]
    assert _apply(link=link, listing=Listing(members=members, complete=True)) == 2
    people = {p.lms_id: p for p in LmsPerson.objects.filter(lms_id__in=["sub-1", "sub-2"],
                                                           user__memberships__course=found)}
    assert (people["sub-1"].sis_id, people["sub-2"].sis_id) == ("SIS-100", "")
    rows = _rows(gradebook_canvas_csv(gradebook_read(course=found)))
    assert sorted(rows[2:]) == [["Johnson, Katherine", "", "SIS-100", "", ""],
                             ["Vaughan, Dorothy", "", "", "", ""]]
