"""Course operations on a fixture of known submissions graded by the real engine: exact analytics
counts and gradebook rows, audited overrides, and a regrade whose preview lists exactly the scores
that change and whose application changes exactly those."""

from __future__ import annotations

import re
from typing import Any

import pytest

from courseops.analytics import analytics_read
from courseops.gradebook import gradebook_csv, gradebook_read
from courseops.models import Regrade, ResultRevision, ScoreOverride
from courseops.overrides import OverrideError, score_override_create
from courseops.regrades import (
    RegradeError,
    regrade_apply,
    regrade_apply_start,
    regrade_preview_compute,
    regrade_request,
)
from grader.models import Result
from tests.clients import logged_in
from tests.courseops_known import KnownCourse, known_course_build

pytestmark = pytest.mark.django_db
MUL = ["x", "mul", "add", "z"]
POW = ["x", "pow", "add", "z"]


@pytest.fixture
def known(django_db_setup: None) -> KnownCourse:
    return known_course_build()


def test_analytics_count_each_mistake_of_the_fixture(known: KnownCourse) -> None:
    x = analytics_read(assignment=known.a)["parts"]["x.grad"]
    # 8 answers to x.grad; wrong: alice 4, bob 4, 4, 12, carol 3, erin 7.001
    assert (x["attempts"], x["wrong"]) == (8, 6)
    assert x["kinds"] == {"missing_path": 4, "product_of_paths": 1, "unknown": 1}
    paths = {tuple(p["path"]): p["count"] for p in x["paths"]}
    assert paths[tuple(MUL)] == 4  # three 4s and the 12 (which multiplies both paths)
    assert paths[tuple(POW)] == 2  # carol's 3 and the 12
    assert x["paths"][0] == {"path": MUL, "count": 4, "share": round(4 / 6, 4)}
    assert x["students"] == 5
    assert x["first"] == {"correct": 1, "kinds": {"missing_path": 3, "unknown": 1}}  # only dave right at once
    assert x["final"] == {"correct": 2, "kinds": {"missing_path": 1, "product_of_paths": 1, "unknown": 1}}
    assert [s["student"] for s in x["stuck"]] == [known.users["bob"].username]
    assert x["stuck"][0]["attempts"] == 3 and x["stuck"][0]["last_kind"] == "product_of_paths"
    assert sum(day["attempts"] for day in x["by_day"]) == 8

    y = analytics_read(assignment=known.a)["parts"]["y.grad"]
    assert (y["attempts"], y["wrong"]) == (4, 2)  # bob and erin left it unanswered: not attempts
    assert y["kinds"] == {"forward_value": 1, "sign_error": 1}
    assert y["paths"] == [{"path": ["y", "mul", "add", "z"], "count": 1, "share": 0.5}]


def test_gradebook_rows_count_best_or_last_with_late_flags(known: KnownCourse) -> None:
    book = gradebook_read(course=known.course)
    assert [a.slug for a in book.assignments] == [known.b.slug, known.a.slug]  # by title
    assert book.max_scores == [2.0, 2.0]
    rows = {row.username.split("-")[0]: row for row in book.rows}
    assert {name: [(c.score, c.attempts) for c in row.cells] for name, row in rows.items()} == {
        "alice": [(0.5, 2), (2.0, 2)],  # b counts the last: 4 → 1 point, late × 0.5; a counts the best, 2 of 2
        "bob": [(None, 0), (0.0, 3)],
        "carol": [(None, 0), (0.0, 1)],
        "dave": [(None, 0), (1.0, 1)],
        "erin": [(None, 0), (0.0, 1)],
    }
    assert [c.late for c in rows["alice"].cells] == [True, False]
    assert rows["alice"].cells[0].submission_id == known.submissions[("alice", "b", 2)].id
    assert rows["carol"].section == "B"
    assert [r.username.split("-")[0] for r in gradebook_read(course=known.course, section="B").rows] == [
        "carol", "dave"]


def test_a_draft_nobody_can_answer_is_no_gradebook_column_but_one_answered_before_is(known: KnownCourse) -> None:
    from assignments.models import Assignment

    draft = Assignment.objects.create(course=known.course, slug=f"{known.a.slug}-draft", title="Draft",
                                      statement="s", reference_program="x = 1", published=False)
    assert draft.slug not in [a.slug for a in gradebook_read(course=known.course).assignments]
    Assignment.objects.filter(id=known.a.id).update(published=False)  # hidden after students answered
    assert known.a.slug in [a.slug for a in gradebook_read(course=known.course).assignments]


def test_gradebook_csv_has_one_row_per_student_starting_with_the_username(known: KnownCourse) -> None:
    known.users["erin"].first_name = "=HYPERLINK(\"http://evil\")"
    known.users["erin"].save()
    lines = gradebook_csv(gradebook_read(course=known.course)).splitlines()
    assert lines[0] == f"username,name,email,section,{known.b.slug},{known.a.slug},total"
    assert lines[1] == f"{known.users['alice'].username},Alice,alice@example.org,A,0.5,2,2.5"
    assert len(lines) == 6
    assert "'=HYPERLINK" in lines[5]  # a formula in a name is quoted, never run by a spreadsheet


def test_an_override_is_audited_and_the_student_sees_its_comment(known: KnownCourse, make_user: Any) -> None:
    ta = make_user("ta").user
    bob3 = known.submissions[("bob", "a", 3)]
    with pytest.raises(OverrideError):
        score_override_create(submission_id=bob3.id, part="x.grad", score=5, comment="too much", by=ta)
    with pytest.raises(OverrideError):
        score_override_create(submission_id=bob3.id, part="x.grad", score=0.5, comment="  ", by=ta)
    score_override_create(submission_id=bob3.id, part="x.grad", score=0.5, comment="Both paths named.", by=ta)
    audit = ScoreOverride.objects.get(submission=bob3)
    assert (audit.part, audit.score_before, audit.score_after, audit.by_id) == ("x.grad", 0.0, 0.5, ta.id)
    assert Result.objects.get(submission=bob3).score == 0.5
    assert ResultRevision.objects.get(submission=bob3).score == 0.0  # the graded result is kept
    page = logged_in(type("P", (), {"user": known.users["bob"]})()).get(f"/submissions/{bob3.id}/")
    assert "Both paths named." in page.content.decode()


def _apply(regrade: Regrade) -> None:
    regrade_apply_start(regrade_id=regrade.id)
    regrade_apply(regrade_id=regrade.id)


def test_a_regrade_preview_lists_exactly_the_changing_scores_and_applying_changes_exactly_those(
    known: KnownCourse, make_user: Any
) -> None:
    teacher = make_user("instructor").user
    bob3 = known.submissions[("bob", "a", 3)]
    score_override_create(submission_id=bob3.id, part="x.grad", score=0.5, comment="partial", by=teacher)
    before = {r.submission_id: r.score for r in Result.objects.filter(submission__assignment=known.a)}
    # the instructor loosens x.grad's tolerance (erin's 7.001 becomes right) and makes y.grad worth 2
    known.a.parts.filter(key="x.grad").update(rel_tol=1e-3)
    known.a.parts.filter(key="y.grad").update(points=2)
    regrade = regrade_request(assignment=known.a, by=teacher)
    regrade_preview_compute(regrade_id=regrade.id)
    regrade.refresh_from_db()
    sub = known.submissions
    expected = {
        sub[("erin", "a", 1)].id: (0.0, 1.0),
        sub[("alice", "a", 1)].id: (1.0, 2.0),  # y.grad right: its 2 points
        sub[("alice", "a", 2)].id: (2.0, 3.0),
    }
    assert regrade.status == Regrade.Status.PREVIEWED and regrade.checked == 8
    assert {c["submission"]: (c["old"], c["new"]) for c in regrade.changes if c["score_changed"]} == expected
    assert Result.objects.get(submission=sub[("erin", "a", 1)]).score == 0.0  # a preview writes nothing

    _apply(regrade)
    after = {r.submission_id: r.score for r in Result.objects.filter(submission__assignment=known.a)}
    assert {k for k in after if after[k] != before[k]} == set(expected)
    assert {k: after[k] for k in expected} == {k: new for k, (_, new) in expected.items()}
    assert after[bob3.id] == 0.5  # the override survives the regrade
    kept = ResultRevision.objects.filter(regrade=regrade, submission=sub[("erin", "a", 1)]).get()
    assert kept.score == 0.0 and kept.document["parts"][0]["correct"] is False

    regrade_apply(regrade_id=regrade.id)  # a redelivered task changes nothing
    assert ResultRevision.objects.filter(regrade=regrade).count() == len(regrade.changes)
    with pytest.raises(RegradeError):
        regrade_apply_start(regrade_id=regrade.id)
    page = logged_in(type("P", (), {"user": known.users["erin"]})()).get(f"/submissions/{sub[('erin', 'a', 1)].id}/")
    assert "Regraded" in page.content.decode() and "was 0" in page.content.decode()


def test_a_preview_of_an_assignment_changed_since_is_refused(known: KnownCourse, make_user: Any) -> None:
    teacher = make_user("instructor").user
    regrade = regrade_request(assignment=known.a, by=teacher)
    regrade_preview_compute(regrade_id=regrade.id)
    known.a.parts.filter(key="x.grad").update(points=5)
    with pytest.raises(RegradeError, match="changed after this preview"):
        regrade_apply_start(regrade_id=regrade.id)
    assert Regrade.objects.get(id=regrade.id).status == Regrade.Status.STALE


def test_one_submission_is_regraded_alone(known: KnownCourse, make_user: Any) -> None:
    known.a.parts.filter(key="x.grad").update(rel_tol=1e-3)
    erin, dave = known.submissions[("erin", "a", 1)], known.submissions[("dave", "a", 1)]
    regrade = regrade_request(assignment=known.a, by=make_user("ta").user, submission=erin)
    regrade_preview_compute(regrade_id=regrade.id)  # previews, then starts applying itself
    regrade_apply(regrade_id=regrade.id)
    assert Regrade.objects.get(id=regrade.id).status == Regrade.Status.APPLIED
    assert Result.objects.get(submission=erin).score == 1.0
    assert not ResultRevision.objects.filter(submission=dave).exists()


def test_an_extension_clears_the_late_flag_and_a_regrade_restores_the_late_points(known: KnownCourse,
                                                                                  make_user: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from assignments.models import Extension

    alice = known.users["alice"]
    Extension.objects.create(assignment=known.b, student=alice, due_at=timezone.now() + timedelta(days=1))
    cell = next(r for r in gradebook_read(course=known.course).rows if r.user_id == alice.pk).cells[0]
    assert (cell.late, cell.extended, cell.score) == (False, True, 0.5)  # the stored score still has the penalty
    regrade = regrade_request(assignment=known.b, by=make_user("instructor").user)
    regrade_preview_compute(regrade_id=regrade.id)
    regrade.refresh_from_db()
    late = known.submissions[("alice", "b", 2)].id
    assert [(c["submission"], c["old"], c["new"]) for c in regrade.changes] == [(late, 0.5, 1.0)]


def test_the_polled_status_brings_the_header_score_only_to_the_assignment_page(known: KnownCourse) -> None:
    alice = type("P", (), {"user": known.users["alice"]})()
    url = f"/submissions/{known.submissions[('alice', 'a', 2)].id}/status/"
    on_page = logged_in(alice).get(url, HTTP_HX_REQUEST="true",
                                   HTTP_HX_CURRENT_URL=f"http://testserver/assignments/{known.a.slug}/").content.decode()
    assert 'id="assignment-meta" class="meta" hx-swap-oob="true"' in on_page and "2 / 2" in on_page
    elsewhere = logged_in(alice).get(url, HTTP_HX_REQUEST="true",
                                     HTTP_HX_CURRENT_URL=f"http://testserver{url[:-7]}").content.decode()
    assert "assignment-meta" not in elsewhere


def test_each_change_of_a_regrade_preview_carries_its_reason(known: KnownCourse, make_user: Any) -> None:
    """The preview said 5 → 2.50 without saying why (a past due date halved it): each change now names
    the reference, the points, the tolerance, the late factor or the override that explains it."""
    teacher = make_user("instructor").user
    sub = known.submissions
    erin = sub[("erin", "a", 1)]
    score_override_create(submission_id=erin.id, part="x.grad", score=0.5, comment="close enough", by=teacher)
    known.a.parts.filter(key="x.grad").update(rel_tol=1e-3)  # erin's 7.001 becomes right
    known.a.parts.filter(key="y.grad").update(points=2)
    regrade = regrade_request(assignment=known.a, by=teacher)
    regrade_preview_compute(regrade_id=regrade.id)
    regrade.refresh_from_db()
    reasons = {c["submission"]: c["reasons"] for c in regrade.changes}
    assert reasons[erin.id] == [
        "x.grad: the same answer is now right against the same expected answer (the tolerance)",
        "x.grad: the override keeps 0.5 (graded now 1, was 0)",
        "y.grad: points 1 → 2",
    ]
    assert reasons[sub[("alice", "a", 1)].id] == ["y.grad: points 1 → 2"]
    assert all(c["reasons"] for c in regrade.changes)

    # the reference changes: z = xy + x² + x, so x.grad is 8 where it was 7
    known.a.parts.filter(key="y.grad").update(points=1)
    known.a.reference_program = known.a.reference_program.replace("z = a + b", "z = a + b + x")
    known.a.save()
    again = regrade_request(assignment=known.a, by=teacher)
    regrade_preview_compute(regrade_id=again.id)
    again.refresh_from_db()
    alice2 = next(c for c in again.changes if c["submission"] == sub[("alice", "a", 2)].id)
    assert alice2["reasons"] == ["x.grad: the reference changed (expected 7.0 → 8.0)"]
    assert (alice2["old"], alice2["new"]) == (2.0, 1.0)


def test_a_late_factor_change_is_named_and_the_history_counts_as_the_preview(known: KnownCourse,
                                                                            make_user: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from assignments.models import Extension

    teacher = make_user("instructor").user
    Extension.objects.create(assignment=known.b, student=known.users["alice"],
                             due_at=timezone.now() + timedelta(days=1))
    known.b.parts.filter(key="y.grad").update(points=2)  # every result changes; one score changes
    regrade = regrade_request(assignment=known.b, by=teacher)
    regrade_preview_compute(regrade_id=regrade.id)
    regrade.refresh_from_db()
    late = next(c for c in regrade.changes if c["submission"] == known.submissions[("alice", "b", 2)].id)
    assert late["reasons"][0].startswith("late factor ×0.5 → ×1 (submitted before the due date")
    assert (regrade.score_change_count, regrade.feedback_only_count, regrade.checked) == (2, 0, 2)
    from assignments.models import Membership

    Membership.objects.create(user=teacher, course=known.course, role=Membership.Role.INSTRUCTOR)
    staff = logged_in(type("P", (), {"user": teacher})())
    detail = staff.get(f"/staff/assignments/{known.b.slug}/regrades/{regrade.id}/").content.decode()
    history = staff.get(f"/staff/assignments/{known.b.slug}/regrades/").content.decode()
    assert "2 scores change of 2 graded submissions" in re.sub(r"<[^>]+>", "", detail)
    assert "2 scores change of 2 graded submissions" in history  # it said "2 changed of 2", counting feedback too
    assert f"of {regrade.checked} graded submission" in history
    assert "late factor ×0.5 → ×1" in detail
    listed = staff.get(f"/staff/assignments/{known.b.slug}/submissions/")
    assert listed.status_code == 200 and 'class="part-chip bad">x.grad: leaving out a path' in listed.content.decode()
