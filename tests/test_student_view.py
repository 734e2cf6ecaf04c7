"""What course staff submit through the student view is a trial, not a student's attempt: it stays out
of the misconception analytics, the staff's submission lists (page and API), the gradebook and its
exports, while the staff member still sees it in their own history."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest

from assignments.models import Assignment, Part
from assignments.services import membership_set
from courseops.analytics import analytics_read
from courseops.gradebook import gradebook_read
from courseops.submission_lists import SubmissionFilter, submissions_for_staff
from tests.clients import api, logged_in
from tests.courseops_known import KnownCourse, graded_now, known_course_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def known(django_db_setup: None) -> KnownCourse:
    return known_course_build()


@pytest.fixture
def tried(known: KnownCourse, make_user: Any) -> dict[str, Any]:
    """An instructor and a TA of the known course who each answered assignment a wrongly as a student would."""
    people = {"instructor": make_user("instructor"), "ta": make_user("ta")}
    membership_set(user=people["instructor"].user, course=known.course, role="instructor")
    membership_set(user=people["ta"].user, course=known.course, role="ta")
    people["submissions"] = [graded_now(student=people[who].user, assignment=known.a,
                                        answers={"x.grad": "4", "y.grad": "-2"}, code={})
                             for who in ("instructor", "ta")]
    return people


def test_staff_trials_are_not_counted_in_the_misconception_analytics(known: KnownCourse, tried: Any) -> None:
    x = analytics_read(assignment=known.a)["parts"]["x.grad"]
    assert (x["attempts"], x["wrong"], x["kinds"]["missing_path"]) == (8, 6, 4)  # the students' alone
    assert x["students"] == 5
    y = analytics_read(assignment=known.a)["parts"]["y.grad"]
    assert y["kinds"] == {"forward_value": 1, "sign_error": 1}
    by_api = api(tried["instructor"]).get(f"/api/v1/assignments/{known.a.slug}/analytics/").json()
    assert by_api["parts"]["x.grad"]["attempts"] == 8


def test_staff_trials_are_not_in_the_staff_submission_lists(known: KnownCourse, tried: Any) -> None:
    theirs = {s.id for s in tried["submissions"]}
    listed = submissions_for_staff(assignment=known.a, wanted=SubmissionFilter())
    assert len(listed) == 8 and not theirs & {s.id for s in listed}
    wrong = submissions_for_staff(assignment=known.a, wanted=SubmissionFilter(part="x.grad", kind="missing_path"))
    assert len(wrong) == 4 and not theirs & {s.id for s in wrong}
    by_api = api(tried["ta"]).get(f"/api/v1/assignments/{known.a.slug}/submissions/").json()
    assert len(by_api) == 8 and not theirs & {s["id"] for s in by_api}
    page = logged_in(tried["ta"]).get(f"/staff/assignments/{known.a.slug}/submissions/").content.decode()
    assert tried["instructor"].user.username not in page and known.users["bob"].username in page
    # their own history still shows their trial
    mine = logged_in(tried["instructor"]).get(f"/assignments/{known.a.slug}/submissions/").content.decode()
    assert f"/submissions/{tried['submissions'][0].id}/" in mine


def test_a_draft_only_staff_tried_is_no_gradebook_column_nor_in_the_exports(known: KnownCourse, tried: Any) -> None:
    draft = Assignment.objects.create(course=known.course, slug=f"{known.a.slug}-trial", title="Trial draft",
                                      statement="z", params=known.a.params, published=False,
                                      reference_program=known.a.reference_program)
    Part.objects.create(assignment=draft, key="x.grad", order=0, points=1)
    graded_now(student=tried["instructor"].user, assignment=draft, answers={"x.grad": "7"}, code={})
    book = gradebook_read(course=known.course)
    assert draft.slug not in [a.slug for a in book.assignments]
    assert tried["instructor"].user.username not in [row.username for row in book.rows]
    client = api(tried["instructor"])
    for export in ("csv", "canvas", "moodle"):
        text = client.get(f"/api/v1/courses/{known.course.slug}/gradebook/?format={export}").content.decode()
        header = next(csv.reader(io.StringIO(text)))
        assert draft.slug not in header and "Trial draft" not in header, export
        assert tried["instructor"].user.username not in text, export
    assert draft.slug not in client.get(f"/api/v1/courses/{known.course.slug}/gradebook/").json()["students"][0][
        "scores"]
