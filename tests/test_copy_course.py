"""`python manage.py copy_course SOURCE NEW [--title T] [--shift-days N]`: a course copied into a new
term with its assignments (published state, parts, computed variants, version history), policies with
dates shifted, and staff; no students, submissions or extensions; the source's URLs keep working."""

from __future__ import annotations

import uuid
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from assignments.models import Assignment, AssignmentVersion, Course, Extension, Membership, Variant
from assignments.services import membership_set
from authoring.course_copy import copy_slug
from grader.models import Submission
from tests.clients import api, logged_in
from tests.courseops_known import clone_assignment

pytestmark = pytest.mark.django_db


@pytest.fixture
def term(django_db_setup: None, make_user: Any) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:6]
    course = Course.objects.create(slug=f"fall-{tag}", title="Autograd, fall")
    live = clone_assignment(slug="visual-walkthrough", course=course)
    due = timezone.now() + timedelta(days=10)
    Assignment.objects.filter(id=live.id).update(
        opens_at=due - timedelta(days=7), due_at=due, closes_at=due + timedelta(days=2), max_attempts=4,
        late_penalty=[[24, 0.5]], published=True, version=2, draft={"title": "pending edit"})
    for number in (1, 2):
        AssignmentVersion.objects.create(assignment=live, number=number, catalog=f"# v{number}",
                                         published_at=timezone.now(), overrides=[])
    Variant.objects.create(assignment=live, params={"x": 1}, reference_hash="h", analysis={"a": 1},
                           computed_at=timezone.now())
    draft = clone_assignment(slug="dead-relu", course=course)
    Assignment.objects.filter(id=draft.id).update(published=False, version=0)
    people = {role: make_user(role) for role in ("instructor", "ta", "student")}
    for role, person in people.items():
        membership_set(user=person.user, course=course, role=role)
    Submission.objects.create(student=people["student"].user, assignment=live, status="graded", attempt=1)
    Extension.objects.create(assignment=live, student=people["student"].user, extra_attempts=1, reason="ill")
    live.refresh_from_db()
    return {"course": course, "live": live, "draft": draft, "people": people, "tag": tag}


def test_copy_course_copies_assignments_policies_shifted_and_staff_only(term: Any) -> None:
    new = f"spring-{term['tag']}"
    out = StringIO()
    call_command("copy_course", term["course"].slug, new, "--title", "Autograd, spring", "--shift-days", "140",
                 stdout=out)
    course = Course.objects.get(slug=new)
    assert course.title == "Autograd, spring"
    live, draft = term["live"], term["draft"]
    copies = {a.slug: a for a in Assignment.objects.filter(course=course)}
    assert set(copies) == {f"{live.slug}-{new}", f"{draft.slug}-{new}"}
    copy = copies[f"{live.slug}-{new}"]
    assert (copy.title, copy.statement, copy.reference_program, copy.params) == (
        live.title, live.statement, live.reference_program, live.params)
    assert (copy.published, copy.version, copy.max_attempts, copy.late_penalty, copy.draft) == (
        True, 2, 4, [[24, 0.5]], None)
    for name in ("opens_at", "due_at", "closes_at"):
        assert getattr(copy, name) == getattr(live, name) + timedelta(days=140), name
    keys = ("key", "kind", "points")
    assert list(copy.parts.values_list(*keys)) == list(live.parts.values_list(*keys))
    assert list(copy.versions.order_by("number").values_list("number", "catalog")) == [(1, "# v1"), (2, "# v2")]
    assert list(copy.variants.values_list("reference_hash", flat=True)) == ["h"]  # no reference run again
    assert copies[f"{draft.slug}-{new}"].published is False
    roles = dict(Membership.objects.filter(course=course).values_list("user__username", "role"))
    people = term["people"]
    assert roles == {people["instructor"].user.username: "instructor", people["ta"].user.username: "ta"}
    assert not Submission.objects.filter(assignment__course=course).exists()
    assert not Extension.objects.filter(assignment__course=course).exists()
    text = out.getvalue()
    assert f"{live.slug} → {live.slug}-{new}" in text and "unpublished edits not copied" in text
    # the source is untouched and its URLs still answer
    live.refresh_from_db()
    assert (live.slug, live.course_id, live.draft) == (term["live"].slug, term["course"].id, {"title": "pending edit"})
    assert logged_in(people["student"]).get(f"/assignments/{live.slug}/").status_code == 200
    # a student of the new term sees the copy with its own dates
    membership_set(user=people["student"].user, course=course, role="student")
    listed = {a["slug"]: a for a in api(people["student"]).get("/api/v1/assignments/").json()}
    assert f"{live.slug}-{new}" in listed and f"{draft.slug}-{new}" not in listed
    assert logged_in(people["instructor"]).get(f"/staff/courses/{new}/gradebook/").status_code == 200


def test_copy_course_refuses_a_taken_slug_an_unknown_source_and_bad_input(term: Any) -> None:
    with pytest.raises(CommandError, match="exists already"):
        call_command("copy_course", term["course"].slug, term["course"].slug, stdout=StringIO())
    with pytest.raises(CommandError, match="no course"):
        call_command("copy_course", "no-such-course", f"x-{term['tag']}", stdout=StringIO())
    with pytest.raises(CommandError, match="letters, digits"):
        call_command("copy_course", term["course"].slug, "not a slug", stdout=StringIO())
    with pytest.raises(CommandError, match="ten years"):
        call_command("copy_course", term["course"].slug, f"y-{term['tag']}", "--shift-days", "99999",
                     stdout=StringIO())
    Assignment.objects.create(course=term["course"], slug=f"{term['live'].slug}-z-{term['tag']}", title="t",
                              statement="s", reference_program="z = 1", published=False)
    with pytest.raises(CommandError, match="taken already"):
        call_command("copy_course", term["course"].slug, f"z-{term['tag']}", stdout=StringIO())
    assert not Course.objects.filter(slug__in=[f"x-{term['tag']}", f"y-{term['tag']}", f"z-{term['tag']}"]).exists()


def test_a_copy_slug_stays_within_the_slug_length() -> None:
    assert copy_slug(slug="visual-walkthrough", course_slug="spring") == "visual-walkthrough-spring"
    long = copy_slug(slug="a" * 45, course_slug="autograd-spring-2027")
    assert len(long) == 50 and long.startswith("a" * 41 + "-")
    assert long != copy_slug(slug="a" * 45, course_slug="autograd-spring-2028")
