"""Feedback release: what a wrong attempt shows a student is the level the instructor chose (the
assignment's own, else the course's), before and after the reveal moment, on every page, in the API
and at the picture's own address; the course's staff always see everything."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from assignments.models import RELEASES, Assignment, Course
from assignments.services import course_demo
from catalog.errors import CatalogError
from catalog.export import assignment_toml
from catalog.spec import catalog_data, spec_from_data
from grader.models import Submission
from tests.authoring_forms import WALKTHROUGH_REFERENCE, form_post, preview_page
from tests.clients import api, keys_anywhere, logged_in
from tests.test_reveal import _assignment, _at, _graded_wrong, _texts


def _seen(person: Any, submission: Submission) -> dict[str, Any]:
    """What the person gets of this submission: the result page, the API document, the picture URL."""
    client = logged_in(person)
    document = api(person).get(f"/api/v1/submissions/{submission.id}/").json()["result"]
    picture = client.get(f"/submissions/{submission.id}/graph.svg?part=x.grad")
    scripted = api(person).get(f"/submissions/{submission.id}/graph.svg?part=x.grad")  # a script's token
    assert (scripted.status_code, scripted.content) == (picture.status_code, picture.content)
    return {"page": client.get(f"/submissions/{submission.id}/").content.decode(),
            "part": document["parts"][0], "keys": keys_anywhere(document),
            "picture": _texts(picture.content) if picture.status_code == 200 else None}


def _level_of(seen: dict[str, Any]) -> str:
    """The release level the person was given, read back from what they got."""
    if "expected" in seen["keys"]:
        return "answer_key"
    if seen["picture"] is not None:
        return "full_picture" if "x.grad = 9" in seen["picture"] else "picture"
    return "words" if "diagnosis" in seen["part"] else "verdict"


@pytest.mark.django_db
@pytest.mark.parametrize("level", RELEASES)
def test_a_student_gets_exactly_the_level_chosen_before_the_due_date(level: str, student: Any,
                                                                     instructor: Any) -> None:
    assignment = _assignment(due_at=timezone.now() + timedelta(hours=1), reveal="after_due",
                             release_before=level, release_after="answer_key")
    seen = _seen(student, _graded_wrong(student, assignment))
    assert _level_of(seen) == level
    assert seen["part"]["verdict"] == "incorrect" and "✗</span> incorrect" in seen["page"]  # always
    assert ('class="diagnosis"' in seen["page"]) == (level != "verdict")
    assert ('class="graph"' in seen["page"]) == (level in ("picture", "full_picture", "answer_key"))
    assert ("graph_svg_url" in seen["part"]) == (level in ("picture", "full_picture", "answer_key"))
    assert ("Expected answer" in seen["page"]) == (level == "answer_key")
    if level == "picture":  # no label gives x.grad = 9 away
        assert not [text for text in seen["picture"] if re.search(r"(?<![\d.])9(?![\d])", text)], seen["picture"]
    if level != "answer_key":
        assert not re.search(r"(?<![\d.])9\.0(?!\d)", seen["page"])
    staff = _seen(instructor, Submission.objects.get(student=student.user))
    assert _level_of(staff) == "answer_key" and "Expected (shown to instructors only)" in staff["page"]


@pytest.mark.django_db
def test_the_level_changes_at_the_students_own_due_date(monkeypatch: pytest.MonkeyPatch, student: Any) -> None:
    now = timezone.now()
    assignment = _assignment(due_at=now + timedelta(hours=1), reveal="after_due",
                             release_before="words", release_after="full_picture")
    submission = _graded_wrong(student, assignment)
    before = _seen(student, submission)
    assert _level_of(before) == "words"
    assert "after your due date: the verdict, what went wrong and the whole picture" in logged_in(student).get(
        f"/assignments/{assignment.slug}/").content.decode()
    _at(monkeypatch, now + timedelta(hours=2))
    assert _level_of(_seen(student, submission)) == "full_picture"


@pytest.mark.django_db
def test_the_level_changes_with_the_last_attempt(student: Any) -> None:
    assignment = _assignment(max_attempts=2, reveal="after_attempts", release_before="verdict",
                             release_after="picture")
    first = _graded_wrong(student, assignment)
    assert _level_of(_seen(student, first)) == "verdict"
    _graded_wrong(student, assignment)
    assert _level_of(_seen(student, first)) == "picture"


@pytest.mark.django_db
def test_an_assignment_without_its_own_level_follows_the_course_set_on_its_page(student: Any,
                                                                               instructor: Any) -> None:
    assignment = _assignment(reveal="never")
    submission = _graded_wrong(student, assignment)
    assert _level_of(_seen(student, submission)) == "picture"  # the default: something left to find
    page = logged_in(instructor).post(f"/staff/courses/{course_demo().slug}/feedback/",
                                      {"release_before": "words", "release_after": "answer_key"})
    assert page.status_code == 302 and Course.objects.get(pk=course_demo().pk).release_before == "words"
    assert _level_of(_seen(student, submission)) == "words"
    Assignment.objects.filter(pk=assignment.pk).update(release_before="full_picture")  # its own level wins
    assert _level_of(_seen(student, submission)) == "full_picture"


@pytest.mark.django_db
def test_the_course_levels_are_set_through_the_api_and_a_wrong_one_is_refused(instructor: Any,
                                                                             student: Any) -> None:
    url = f"/api/v1/staff/courses/{course_demo().slug}/feedback/"
    assert api(instructor).put(url, {"release_before": "verdict", "release_after": "full_picture"},
                               format="json").json() == {"release_before": "verdict", "release_after": "full_picture"}
    assert api(instructor).get(url).json()["release_after"] == "full_picture"
    refused = api(instructor).put(url, {"release_before": "everything", "release_after": "answer_key"}, format="json")
    assert refused.status_code == 400 and "release_before" in refused.json()["errors"]
    assert api(student).put(url, {"release_before": "answer_key", "release_after": "answer_key"},
                            format="json").status_code in (403, 404)
    assert Course.objects.get(pk=course_demo().pk).release_before == "verdict"


@pytest.mark.django_db
def test_the_api_says_the_levels_and_the_one_in_force(student: Any) -> None:
    assignment = _assignment(reveal="after_attempts", max_attempts=3, release_before="words")
    row = api(student).get(f"/api/v1/assignments/{assignment.slug}/").json()
    assert row["feedback"] == {"before": "words", "after": "answer_key", "now": "words"}


@pytest.mark.django_db
def test_the_levels_round_trip_through_the_catalog_toml() -> None:
    assignment = _assignment(reveal="after_due", due_at=timezone.now() + timedelta(days=1),
                             release_before="verdict", release_after="full_picture")
    text = assignment_toml(assignment=assignment)
    assert 'release_before = "verdict"' in text and 'release_after = "full_picture"' in text
    policy = spec_from_data(catalog_data("a.toml", text.encode()), path="a.toml").policy
    assert (policy["release_before"], policy["release_after"]) == ("verdict", "full_picture")
    with pytest.raises(CatalogError) as refused:
        spec_from_data(catalog_data("a.toml", text.replace('"verdict"', '"all"').encode()), path="a.toml")
    assert refused.value.field == "policy.release_before" and "verdict, words" in refused.value.problem


@pytest.mark.django_db
def test_the_preview_shows_the_trial_as_a_student_sees_it_before_and_after_beside_the_staff_view(
        instructor: Any) -> None:
    client, slug = logged_in(instructor), f"as-student-{timezone.now():%H%M%S%f}"
    walk = {"reference": WALKTHROUGH_REFERENCE, "params": "x0 = 3.0\ny0 = 2.5"}
    form = form_post(slug=slug, reveal="after_attempts", max_attempts="3", release_before="words",
                     release_after="full_picture", **walk)
    assert client.post("/staff/courses/autograd-101/assignments/new/", form).status_code == 302
    page = preview_page(client, slug, {**form, "trial:x.grad": "2.5"})  # x.grad = 8.5: the path through b missed
    staff = page[page.index('id="trial-staff-heading"'):page.index('id="as-student-1"')]
    before = page[page.index('id="as-student-1"'):page.index('id="as-student-2"')]
    after = page[page.index('id="as-student-2"'):page.index("As students see it")]
    assert "<svg" in staff and 'class="diagnosis"' in staff
    assert "before the reveal" in before and "Words: the verdict and the diagnosis" in before
    assert 'class="diagnosis"' in before and "<svg" not in before and "No picture at this level." in before
    assert "once you have used all your attempts" in after and "<svg" in after
    assert "8.5" not in before and "Expected answer" not in before + after


@pytest.mark.django_db
def test_the_walkthrough_is_listed_first_on_the_home_and_course_pages(student: Any, instructor: Any) -> None:
    home = logged_in(student).get("/").content.decode()
    assert home.index("0. Visual walkthrough") < home.index("A. Positive gradient") < home.index("I. Exam twist")
    course = logged_in(instructor).get(f"/staff/courses/{course_demo().slug}/").content.decode()
    assert course.index("0. Visual walkthrough") < course.index("A. Positive gradient")


@pytest.mark.django_db
def test_attempts_with_an_extension_read_the_same_on_the_home_and_assignment_pages(student: Any) -> None:
    from assignments.models import Extension

    assignment = _assignment(max_attempts=3)
    Extension.objects.create(assignment=assignment, student=student.user, extra_attempts=2)
    client = logged_in(student)
    home = client.get("/").content.decode()
    row = home[home.index(f'href="/assignments/{assignment.slug}/"'):]
    assert "5 of 5" in row[:row.index("</tr>")]
    assert "5 of 5" in client.get(f"/assignments/{assignment.slug}/").content.decode()


def test_each_part_of_the_document_carries_the_verdict_the_page_shows() -> None:
    from assignments.templatetags.statement import verdict as page_verdict
    from grader.selectors import document_released

    parts = [{"part": "a", "correct": True, "score": 1.0, "max_score": 1.0},
             {"part": "b", "correct": False, "score": 0.5, "max_score": 1.0,  # partial = true: 1 of 2 gradients
              "diagnosis": {"components": {"w.grad": {"correct": True}, "b.grad": {"correct": False}}}},
             {"part": "c", "correct": False, "score": 0.0, "max_score": 1.0},
             {"part": "d", "correct": False, "score": 1.0, "max_score": 1.0, "override": {"score": 1.0}}]
    released = document_released(document={"score": 2.5, "max_score": 4.0, "parts": parts}, release="verdict")
    assert [part["verdict"] for part in released["parts"]] == ["correct", "partly right", "incorrect", "credited"]
    assert [part["verdict"] for part in released["parts"]] == [page_verdict(part) for part in parts]
    assert [part["correct"] for part in released["parts"]] == [True, False, False, False]  # kept as it was
    assert "diagnosis" not in released["parts"][1]  # the verdict level shows no words


@pytest.mark.django_db
def test_a_courses_levels_go_out_in_its_course_toml_and_come_back_with_load_assignments(tmp_path: Any) -> None:
    from django.core.management import CommandError, call_command

    from catalog.export import COURSE_FILE, course_files

    course = Course.objects.create(slug=f"levels-{timezone.now():%H%M%S%f}", title="Levels",
                                   release_before="verdict", release_after="full_picture")
    exported = course_files(course=course)[COURSE_FILE]
    assert 'release_before = "verdict"' in exported and 'release_after = "full_picture"' in exported
    (tmp_path / COURSE_FILE).write_text(exported.replace(course.slug, f"{course.slug}-copy"), encoding="utf-8")
    (tmp_path / "walk.toml").write_text(
        (Path(__file__).parent.parent / "assignments/catalog/visual-walkthrough.toml").read_text(encoding="utf-8")
        .replace('slug = "visual-walkthrough"', f'slug = "{course.slug}-walk"'), encoding="utf-8")
    with pytest.raises(CommandError):  # --no-check: kept as a draft, which the command reports with exit 1
        call_command("load_assignments", str(tmp_path), "--no-check", verbosity=0)
    copy = Course.objects.get(slug=f"{course.slug}-copy")
    assert (copy.release_before, copy.release_after) == ("verdict", "full_picture")
    (tmp_path / COURSE_FILE).write_text(exported.replace('"verdict"', '"all"'), encoding="utf-8")
    with pytest.raises(CommandError, match="course.release_before: must be one of verdict, words"):
        call_command("load_assignments", str(tmp_path), "--no-check", verbosity=0)


@pytest.mark.django_db
def test_the_authoring_form_sets_an_assignments_own_levels_or_leaves_the_courses(instructor: Any) -> None:
    client, slug = logged_in(instructor), f"form-levels-{timezone.now():%H%M%S%f}"
    form = form_post(slug=slug, release_before="verdict", release_after="", reveal="never")
    assert client.post("/staff/courses/autograd-101/assignments/new/", form).status_code == 302
    assignment = Assignment.objects.get(slug=slug)
    assert (assignment.release_before, assignment.release_after) == ("verdict", None)
    assert assignment.releases == ("verdict", course_demo().release_after)  # the course's, where none is set
    page = client.get(f"/staff/assignments/{slug}/edit/").content.decode()
    assert re.search(r'<option value="verdict" selected>', page)
    assert "the course&#x27;s setting" in page or "the course's setting" in page
    refused = client.post(f"/staff/assignments/{slug}/edit/", {**form, "release_before": "everything"})
    assert refused.status_code == 400 and Assignment.objects.get(slug=slug).release_before == "verdict"


@pytest.mark.django_db
def test_the_authoring_api_sets_an_assignments_own_levels_in_its_toml(instructor: Any) -> None:
    from tests.test_authoring_api import _toml

    slug = f"api-levels-{timezone.now():%H%M%S%f}"
    toml = _toml(slug) + '[policy]\nrelease_before = "words"\nrelease_after = "answer_key"\n'
    created = api(instructor).post("/api/v1/staff/courses/autograd-101/assignments/", {"toml": toml}, format="json")
    assert created.status_code == 201, created.content
    assert 'release_before = "words"' in created.json()["toml"]
    assert Assignment.objects.get(slug=slug).releases == ("words", "answer_key")
    refused = api(instructor).put(f"/api/v1/staff/assignments/{slug}/",
                                  {"toml": toml.replace('"words"', '"most"')}, format="json")
    assert refused.status_code == 400 and "policy.release_before" in refused.json()["errors"]


@pytest.mark.django_db
def test_a_last_attempt_still_being_graded_reveals_nothing_yet(make_user: Any) -> None:
    """An infrastructure failure gives a pending attempt back: a key shown while it was queued would be
    seen with an attempt still to use."""
    import uuid

    from assignments.models import Assignment, Course
    from assignments.services import membership_set
    from grader.models import Submission
    from grader.selectors import assignment_row, release_for
    from tests.courseops_known import clone_assignment

    course = Course.objects.create(slug=f"c-{uuid.uuid4().hex[:6]}", title="C")
    live = clone_assignment(slug="visual-walkthrough", course=course)
    Assignment.objects.filter(id=live.id).update(published=True, max_attempts=1, reveal="after_attempts",
                                                 release_before="words", release_after="answer_key")
    live.refresh_from_db()
    student = make_user("student")
    membership_set(user=student.user, course=course, role="student")
    last = Submission.objects.create(student=student.user, assignment=live, variant=live.variants.first(),
                                     answers={}, code={}, attempt=1, status=Submission.Status.QUEUED)
    row = assignment_row(user=student.user, slug=live.slug)
    assert row.release == "words" and not row.expected_shown
    assert release_for(user=student.user, assignment=live) == "words"
    Submission.objects.filter(id=last.id).update(status=Submission.Status.GRADED)
    assert assignment_row(user=student.user, slug=live.slug).expected_shown
    assert release_for(user=student.user, assignment=live) == "answer_key"
