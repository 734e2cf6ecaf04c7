"""Instructors author through the forms: create, preview with a trial answer, vet, publish, copy, delete."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from assignments.models import Assignment, AssignmentVersion
from grader.models import Submission
from tests.authoring_forms import BROKEN_REFERENCE, WALKTHROUGH_REFERENCE, form_post, preview_page, publish_page
from tests.clients import logged_in

pytestmark = pytest.mark.django_db


def _slug(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def test_an_instructor_creates_previews_tries_a_wrong_answer_and_publishes(instructor: Any) -> None:
    client = logged_in(instructor)
    slug = _slug("walk")
    walk = {"reference": WALKTHROUGH_REFERENCE, "params": "x0 = 3.0\ny0 = 2.5"}
    created = client.post("/staff/courses/autograd-101/assignments/new/", form_post(slug=slug, **walk))
    assert created.status_code == 302, created.content.decode()[:2000]
    assignment = Assignment.objects.get(slug=slug)
    assert not assignment.published and assignment.version == 0

    # x.grad = y + 2x = 8.5 at (3, 2.5); forgetting the path through b gives y = 2.5.
    trial = {**form_post(slug=slug, **walk), "trial:x.grad": "2.5"}
    page = preview_page(client, slug, trial)
    assert "8.5" in page and "<svg" in page
    assert "x → pow → add → z" in page  # a path with its contribution
    assert "Feedback space" in page and "missing path" in page
    assert "Trial: what the student gets" in page and "Score: <strong>0 / 2</strong>" in page
    # first, where the instructor looks: below the feedback space it was ~7,000 px from the button
    assert page.index("Trial: what the student gets") < page.index("As students see it")
    staff_views = page[:page.index('id="as-student-1"')] + page[page.index("As students see it"):]
    assert "Some gradients are hidden" not in staff_views  # the instructor's pictures show every gradient

    # The walkthrough's ambiguity: 2.5 is both "missed x → pow → add → z" and y's forward value.
    refused = publish_page(client, slug)
    assert "Not published." in refused
    reason = "the answer 2.5 is both missing path x → pow → add → z and y&#x27;s forward value"
    assert reason in refused and 'name="justify:ambiguous-mistakes:parts.x.grad"' in refused
    assert not Assignment.objects.get(slug=slug).published
    why = "the lesson discusses this ambiguity in class"
    published = publish_page(client, slug, {"justify:ambiguous-mistakes:parts.x.grad": why})
    assert "Published version 1." in published, published[:3000]
    assignment.refresh_from_db()
    assert assignment.published and assignment.version == 1
    version = AssignmentVersion.objects.get(assignment=assignment)
    assert f'slug = "{slug}"' in version.catalog and version.overrides[0]["justification"] == why


def test_a_clean_assignment_publishes_without_justification(instructor: Any) -> None:
    client = logged_in(instructor)
    slug = _slug("clean")
    assert client.post("/staff/courses/autograd-101/assignments/new/", form_post(slug=slug)).status_code == 302
    assert "Vet and publish version 1" in client.get(f"/staff/assignments/{slug}/publish/").content.decode()
    assert "Published version 1." in publish_page(client, slug)
    assert Assignment.objects.get(slug=slug).published


def test_a_reference_error_shows_the_instructors_own_line_number(instructor: Any) -> None:
    client = logged_in(instructor)
    slug = _slug("broken")
    assert client.post("/staff/courses/autograd-101/assignments/new/", form_post(slug=slug)).status_code == 302
    post = form_post(slug=slug, reference=BROKEN_REFERENCE)
    page = preview_page(client, slug, post)
    assert "NameError" in page and "program line 2" in page
    assert '<span class="failing">  2  z = x * q</span>' in page


def test_vetting_refuses_a_weak_assignment_listing_each_reason_until_justified(instructor: Any) -> None:
    client = logged_in(instructor)
    slug = _slug("weak")
    # z = 3x² + 2y at (0, 1): dz/dx = 6x = 0 (the answer 0 passes) and dz/dy = 2 = z's own value.
    post = form_post(slug=slug, params="x0 = 0.0\ny0 = 1.0",
                     parts=[{"key": "x.grad", "kind": "numeric"}, {"key": "y.grad", "kind": "numeric"}])
    assert client.post("/staff/courses/autograd-101/assignments/new/", post).status_code == 302
    page = publish_page(client, slug)
    assert "Not published." in page and "2 reasons" in page
    assert "parts.x.grad</code>: the answer 0 passes" in page
    assert "parts.y.grad</code>: the forward value of z passes" in page
    assert not Assignment.objects.get(slug=slug).published
    codes = ["trivial-answer:parts.x.grad", "trivial-answer:parts.y.grad"]
    half = publish_page(client, slug, {f"justify:{codes[0]}": "warm-up", f"justify:{codes[1]}": "   "})
    assert "1 reason not" in half and "<code>parts.x.grad</code>" not in half  # one left to justify
    # The justification already given comes back in the form, so the next press keeps it.
    assert f'name="justify:{codes[0]}" rows="1">warm-up</textarea>' in half
    assert not Assignment.objects.get(slug=slug).published
    justified = publish_page(client, slug, {f"justify:{codes[0]}": "warm-up",
                                            f"justify:{codes[1]}": "the point is reading the graph"})
    assert "Published version 1." in justified, justified[:3000]
    version = AssignmentVersion.objects.get(assignment__slug=slug)
    assert {o["code"]: o["justification"] for o in version.overrides} == {
        codes[0]: "warm-up", codes[1]: "the point is reading the graph"}


def test_a_part_key_naming_no_tensor_is_a_reason(instructor: Any) -> None:
    client = logged_in(instructor)
    slug = _slug("nokey")
    post = form_post(slug=slug, parts=[{"key": "w.grad", "kind": "numeric"}])
    assert client.post("/staff/courses/autograd-101/assignments/new/", post).status_code == 302
    page = publish_page(client, slug)
    assert "parts.w</code>: names no tensor of the reference program" in page


def test_edits_to_a_published_assignment_wait_in_a_draft(instructor: Any) -> None:
    client = logged_in(instructor)
    slug = _slug("drafted")
    assert client.post("/staff/courses/autograd-101/assignments/new/", form_post(slug=slug)).status_code == 302
    assert "Published version" in publish_page(client, slug)
    edited = form_post(slug=slug, params="x0 = 2.5\ny0 = -0.5")
    assert client.post(f"/staff/assignments/{slug}/edit/", edited).status_code == 302
    assignment = Assignment.objects.get(slug=slug)
    assert assignment.params == {"x0": 1.5, "y0": -0.5} and assignment.draft["params"] == {"x0": 2.5, "y0": -0.5}
    assert "x0 = 2.5" in client.get(f"/staff/assignments/{slug}/edit/").content.decode()
    assert "Published version" in publish_page(client, slug)
    assignment.refresh_from_db()
    assert assignment.params == {"x0": 2.5, "y0": -0.5} and assignment.version == 2 and assignment.draft is None


def test_delete_archives_an_assignment_with_submissions_and_keeps_them(instructor: Any, student: Any) -> None:
    client = logged_in(instructor)
    slug = _slug("keep")
    assert client.post("/staff/courses/autograd-101/assignments/new/", form_post(slug=slug)).status_code == 302
    assignment = Assignment.objects.get(slug=slug)
    Submission.objects.create(student=student.user, assignment=assignment, answers={"x.grad": "1"})
    assert client.post(f"/staff/assignments/{slug}/delete/").status_code == 302
    assignment.refresh_from_db()
    assert assignment.archived_at is not None and assignment.submissions.count() == 1
    assert logged_in(student).get(f"/assignments/{slug}/").status_code == 404

    other = _slug("gone")
    assert client.post("/staff/courses/autograd-101/assignments/new/", form_post(slug=other)).status_code == 302
    assert client.post(f"/staff/assignments/{other}/delete/").status_code == 302
    assert not Assignment.objects.filter(slug=other).exists()


def test_an_archived_assignment_is_restored_from_the_course_page_with_its_submissions(
        instructor: Any, student: Any) -> None:
    client = logged_in(instructor)
    slug = _slug("restore")
    assert client.post("/staff/courses/autograd-101/assignments/new/", form_post(slug=slug)).status_code == 302
    assert "Published version" in publish_page(client, slug)
    assignment = Assignment.objects.get(slug=slug)
    kept = Submission.objects.create(student=student.user, assignment=assignment, answers={"x.grad": "1"}, attempt=1)
    assert client.post(f"/staff/assignments/{slug}/delete/").status_code == 302
    assert logged_in(student).get(f"/assignments/{slug}/").status_code == 404

    course_page = client.get("/staff/courses/autograd-101/").content.decode()
    archived = course_page[course_page.index("<h2>Archived</h2>"):]
    assert slug in archived and "1 submission" in archived and f"/staff/assignments/{slug}/restore/" in archived
    assert "Restore" in client.get(f"/staff/assignments/{slug}/edit/").content.decode()
    assert logged_in(student).post(f"/staff/assignments/{slug}/restore/").status_code == 403

    restored = client.post(f"/staff/assignments/{slug}/restore/", follow=True)
    assert f"{slug} restored as published (v1), with its 1 submission(s)." in restored.content.decode()
    history = logged_in(student).get(f"/assignments/{slug}/submissions/")
    assert history.status_code == 200 and f"/submissions/{kept.id}/" in history.content.decode()
    assert "<h2>Archived</h2>" not in client.get("/staff/courses/autograd-101/").content.decode() or \
        slug not in client.get("/staff/courses/autograd-101/").content.decode().split("<h2>Archived</h2>")[1]


def test_duplicate_makes_an_unpublished_copy_under_a_new_slug(instructor: Any) -> None:
    client = logged_in(instructor)
    slug = _slug("orig")
    assert client.post("/staff/courses/autograd-101/assignments/new/", form_post(slug=slug)).status_code == 302
    response = client.post(f"/staff/assignments/{slug}/duplicate/", {"slug": f"{slug}-b", "title": "Copy"})
    assert response.status_code == 302
    copy = Assignment.objects.get(slug=f"{slug}-b")
    assert copy.title == "Copy" and not copy.published and [p.key for p in copy.parts.all()] == ["x.grad", "y.grad"]


def test_form_errors_name_the_field_and_lose_nothing(instructor: Any) -> None:
    client = logged_in(instructor)
    slug = _slug("bad")
    post = form_post(slug=slug, params="x0 = [unclosed")
    response = client.post("/staff/courses/autograd-101/assignments/new/", post)
    page = response.content.decode()
    assert response.status_code == 400 and "params: is not valid TOML" in page
    assert "Take $z = x y + x^2$" in page  # what was typed comes back
    assert not Assignment.objects.filter(slug=slug).exists()


def test_a_reference_too_deeply_nested_to_compile_is_a_form_error_not_a_500(instructor: Any) -> None:
    client = logged_in(instructor)
    slug = _slug("deep")
    response = client.post("/staff/courses/autograd-101/assignments/new/",
                           form_post(slug=slug, reference="x = " + "-" * 19_000 + "1\n"))
    assert response.status_code == 400 and "reference: Line 1 chains more than 50 unary operators" in \
        response.content.decode()
    assert not Assignment.objects.filter(slug=slug).exists()


def test_a_submission_keeps_the_version_it_was_graded_against(instructor: Any, student: Any) -> None:
    from django.utils import timezone

    from assignments.selectors import version_graded_against

    client = logged_in(instructor)
    slug = _slug("versions")
    assert client.post("/staff/courses/autograd-101/assignments/new/", form_post(slug=slug)).status_code == 302
    assert "Published version" in publish_page(client, slug)
    assignment = Assignment.objects.get(slug=slug)
    graded = Submission.objects.create(student=student.user, assignment=assignment, answers={"x.grad": "9"},
                                       status=Submission.Status.GRADED, graded_at=timezone.now())
    assert client.post(f"/staff/assignments/{slug}/edit/", form_post(slug=slug, params="x0 = 2.5\ny0 = -0.5")
                       ).status_code == 302
    assert "Published version" in publish_page(client, slug)
    version = version_graded_against(assignment_id=assignment.pk, graded_at=graded.graded_at)
    assert version is not None and version.number == 1 and "x0 = 1.5" in version.catalog
    latest = version_graded_against(assignment_id=assignment.pk, graded_at=timezone.now())
    assert latest is not None and latest.number == 2 and "x0 = 2.5" in latest.catalog


def test_the_feedback_space_covers_formula_parts_and_says_what_it_is_for_code(instructor: Any) -> None:
    import html as html_lib
    import re

    client = logged_in(instructor)
    slug = _slug("space")
    walk = {"reference": WALKTHROUGH_REFERENCE, "params": "x0 = 3.0\ny0 = 2.5"}
    parts = [{"key": "x.grad", "kind": "numeric"},
             {"key": "dz_dx", "kind": "symbolic", "config": 'variables = { x = "x0", y = "y0" }\nof = "x.grad"'},
             {"key": "grad_z", "kind": "code", "points": "2",
              "config": 'mode = "function"\nfunction = "grad_z"\nargs = ["x0", "y0"]\nreturns = ["x.grad", "y.grad"]'
                        '\nforbid_autograd = true'}]
    assert client.post("/staff/courses/autograd-101/assignments/new/",
                       form_post(slug=slug, parts=parts, **walk)).status_code == 302
    # The trial: the formula y forgets the path through b = x², at every point.
    page = html_lib.unescape(preview_page(client, slug, {**form_post(slug=slug, parts=parts, **walk),
                                                         "trial:dz_dx": "y"}))
    formula = page[page.index('aria-label="Part dz_dx"'):page.index('aria-label="Part grad_z"')]
    assert "Value at the seed point" in formula and "x = 3.0, y = 2.5" in formula
    # Forgetting b = x²'s path leaves y: 2.5 at the seed point, and the message names that path.
    row = re.search(r'<tr><td><code>2\.5</code></td><td>missing path</td><td class="diagnosis"><p>(.*?)</p>', formula)
    assert row and row.group(1).startswith("Your formula leaves out the path x → pow → add → z."), formula
    trial = page[page.index("Trial: what the student gets"):]
    trial_message = re.search(r'<code>dz_dx</code>.*?<div class="diagnosis"><p>(.*?)</p>', trial, re.S)
    assert trial_message, trial
    first_sentence = row.group(1).split(". ")[0]
    assert trial_message.group(1).startswith(first_sentence)  # what the table promises is what a student gets
    assert "at all 6 points checked" in trial_message.group(1)  # the trial runs the full check

    code = page[page.index('aria-label="Part grad_z"'):]
    assert "Code parts have no precomputed feedback space" in code and "x.grad, y.grad" in code


def test_the_feedback_space_lists_each_answer_within_tolerance_once() -> None:
    """A student typing 0.25465 gets one message: the preview listed 0.25465 and 0.2546501 as two rows."""
    from authoring.feedback_space import Mistake, _distinct

    rows = [Mistake(0.25465, "wrong local derivative", "m"), Mistake(0.2546501, "wrong local derivative", "m"),
            Mistake(0.25465, "forward value", "m"), Mistake(-0.25465, "sign error", "s"),
            Mistake([1.0, 2.0], "shape", "t"), Mistake([1.0, 2.0000001], "shape", "t"),
            Mistake(None, "untracked leaf", "n")]
    assert _distinct(rows, rel_tol=1e-4, abs_tol=1e-6) == [
        Mistake(0.25465, "wrong local derivative or forward value", "m"), rows[3], rows[4], rows[6]]
    assert len(_distinct(rows[:2], rel_tol=1e-9, abs_tol=0.0)) == 2  # apart under a tighter tolerance


def test_the_course_page_lists_its_current_staff(instructor: Any, student: Any) -> None:
    """The Staff section had only an add form: nobody could see who already teaches the course."""
    page = logged_in(instructor).get("/staff/courses/autograd-101/").content.decode()
    staff = page[page.index("<h2>Staff</h2>"):]
    staff = staff[:staff.index("<form")]
    assert f"{instructor.user.username}" in staff and "Instructor" in staff
    assert student.user.username not in staff


def test_a_tolerance_warning_is_shown_with_the_published_version(instructor: Any) -> None:
    """x.grad = 3·x² = 0.00045387 at x = 0.0123: rounded to 4 decimals (0.0005) it is marked wrong. A warning,
    not a refusal: it publishes without a justification and says so."""
    client = logged_in(instructor)
    slug = _slug("tight")
    post = form_post(slug=slug, reference="x = torch.tensor(x0, requires_grad=True)\nz = x**3\nz.backward()\n",
                     params="x0 = 0.0123", parts=[{"key": "x.grad", "kind": "numeric"}])
    assert client.post("/staff/courses/autograd-101/assignments/new/", post).status_code == 302
    published = publish_page(client, slug)
    assert "Published version 1." in published, published[:3000]
    assert "Vetting warns" in published and "rounded to 4 decimals (0.0005) wrong" in published
    assert AssignmentVersion.objects.get(assignment__slug=slug).overrides == []  # nothing was accepted


def test_a_program_parts_requirements_are_shown_in_the_preview_and_refused_when_unknown(instructor: Any) -> None:
    """A requirement is the only ground on which right values earn nothing: the instructor sees it stated, and
    one the engine cannot check is refused with the list of those it can."""
    import html as html_lib

    client = logged_in(instructor)
    slug = _slug("required")
    program = {"key": "program", "kind": "code",
               "config": 'mode = "program"\nreads = ["x.grad"]\nbackward_calls = 2\nforbid = ["no_grad"]'}
    post = form_post(slug=slug, parts=[{"key": "x.grad", "kind": "numeric"}, program])
    assert client.post("/staff/courses/autograd-101/assignments/new/", post).status_code == 302
    page = html_lib.unescape(preview_page(client, slug, post))
    shown = page[page.index('aria-label="Part program"'):]
    assert ("Requirements stated for this part (right values that break one earn nothing): call backward() exactly "
            "twice; do not use torch.no_grad().") in shown
    unknown = {**program, "config": 'mode = "program"\nreads = ["x.grad"]\nforbid = ["autograd"]'}
    refused = client.post(f"/staff/assignments/{slug}/edit/", form_post(slug=slug, parts=[unknown]))
    assert refused.status_code == 400
    assert ("must list constructs from torch.autograd.grad, torch.func, .data, detach, no_grad, retain_graph; got "
            "'autograd'") in html_lib.unescape(refused.content.decode())
