"""Regrade with preview: after a change of reference, tolerance, points or late policy, list exactly
whose scores would change, then apply exactly those through the queue, keeping the old results.

Both steps re-run grading through grader.services (the same engine the workers use). The preview
records a fingerprint of everything grading depends on; applying refuses a stale preview.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from assignments.models import Assignment, Extension, Variant
from chainrule.result import counted_score
from courseops.models import Regrade, ResultRevision
from courseops.overrides import document_with_overrides, overrides_of
from grader.models import Result, Submission
from grader.workflow import submission_regraded
from grading.outside_runs import runs_outside
from grading.reference import ReferenceRunError
from grading.variants import variant_ready
from infra import clock
from infra.enqueue import enqueue
from infra.lanes import MAINTENANCE

log = logging.getLogger(__name__)
SCORE_EPSILON = 1e-9


class RegradeError(ValueError):
    """The regrade cannot be applied (not previewed, already applied, or stale)."""


def assignment_fingerprint(*, assignment: Assignment) -> str:
    """Everything a stored result depends on: program, values, parts, the late policy, extensions."""
    parts = [(p.key, p.kind, p.order, p.points, p.rel_tol, p.abs_tol, p.config) for p in assignment.parts.all()]
    extensions = sorted(Extension.objects.filter(assignment=assignment).values_list("student_id", "due_at"))
    blob = json.dumps([assignment.reference_program, assignment.params, assignment.variant_ranges, parts,
                       assignment.due_at, assignment.late_penalty, extensions], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def regrade_request(*, assignment: Assignment, by: AbstractBaseUser, submission: Submission | None = None) -> Regrade:
    """Starts a preview in the queue. With `submission`, only that one is regraded, and the regrade
    applies itself once previewed."""
    regrade = Regrade.objects.create(assignment=assignment, submission=submission, requested_by=by)
    transaction.on_commit(lambda: _enqueue("courseops.regrade_preview", regrade.id))
    return regrade


def _enqueue(task_name: str, regrade_id: int) -> None:
    # A regrade may grade a whole course: never in a numeric grader's turn.
    enqueue(task_name, regrade_id, lane=MAINTENANCE, if_lost="the regrade keeps its status; staff can ask again")


def _graded_rows(regrade: Regrade) -> Iterator[Submission]:
    rows = Submission.objects.filter(assignment_id=regrade.assignment_id, status=Submission.Status.GRADED,
                                     result__isnull=False)
    if regrade.submission_id is not None:
        rows = rows.filter(id=regrade.submission_id)
    return rows.select_related("result", "student").order_by("id").iterator(chunk_size=1000)


class _Regrader:
    """Grades submissions of one assignment with its current reference, each variant resolved once."""

    def __init__(self, *, assignment_id: int, submission_id: int | None = None) -> None:
        self.assignment = Assignment.objects.prefetch_related("parts").get(id=assignment_id)
        self.variants: dict[int, Variant] = {}
        self.overrides = overrides_of(assignment_id=assignment_id, submission_id=submission_id)

    def fields(self, submission: Submission) -> dict[str, Any]:
        """New Result fields, with the submission's overrides applied again on top."""
        submission.assignment = self.assignment
        if submission.variant_id is None:
            raise ReferenceRunError("the submission has no variant")
        if submission.variant_id not in self.variants:
            stored = Variant.objects.get(id=submission.variant_id)
            stored.assignment = self.assignment
            self.variants[submission.variant_id] = variant_ready(variant=stored)
        submission.variant = self.variants[submission.variant_id]
        fields, _ = submission_regraded(submission=submission)
        mine = self.overrides.get(submission.id, [])
        if mine:
            fields["document"] = document_with_overrides(document=fields["document"], overrides=mine)
            fields["score"] = counted_score(fields["document"])
        return fields


def _verdicts(document: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(p["part"], p.get("correct"), p.get("score"), p.get("max_score"), p.get("diagnosis", {}).get("kind"),
             p.get("diagnosis", {}).get("paths")) for p in document.get("parts", [])]


def _change(submission: Submission, fields: dict[str, Any]) -> dict[str, Any] | None:
    """What the preview lists for one submission, or None when its result would stay the same.
    `score_changed` is false when only the feedback or the maximum changes (the points stay)."""
    result = submission.result
    score_changed = abs(fields["score"] - result.score) > SCORE_EPSILON
    same_max = fields["max_score"] == result.max_score
    if not score_changed and same_max and _verdicts(fields["document"]) == _verdicts(result.document):
        return None
    return {"submission": submission.id, "student": submission.student.get_username(),
            "attempt": submission.attempt, "old": result.score, "new": fields["score"],
            "max_score": fields["max_score"], "score_changed": score_changed,
            "reasons": change_reasons(old=result.document, new=fields["document"])}


def _number(value: Any) -> str:
    return f"{float(value):g}" if isinstance(value, (int, float)) else str(value)


def _same(a: Any, b: Any) -> bool:
    """Two expected values alike (numbers to 1e-9, nested lists, None, text)."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= SCORE_EPSILON * max(1.0, abs(float(a)))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def change_reasons(*, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Why one submission's result changes, in the instructor's words: the reference (an expected
    answer changed), the points, the tolerance (the verdict turned with the same expected answer), the
    late factor (due date, extension or late policy), an override kept, or only the feedback."""
    reasons = []
    old_late, new_late = float(old.get("late_factor", 1.0)), float(new.get("late_factor", 1.0))
    if abs(old_late - new_late) > SCORE_EPSILON:
        hours = new.get("hours_late")
        when = f"submitted {_number(round(float(hours), 1))} h after the due date" if isinstance(
            hours, (int, float)) else "submitted before the due date" if new_late == 1.0 else "submitted late"
        reasons.append(f"late factor ×{_number(old_late)} → ×{_number(new_late)} ({when}: the due date, an "
                       "extension or the late policy)")
    before = {p.get("part"): p for p in old.get("parts", [])}
    for part in new.get("parts", []):
        key = part.get("part")
        was = before.pop(key, None)
        if was is None:
            reasons.append(f"{key}: a new part")
            continue
        reasons += _part_reasons(key, was, part)
    reasons += [f"{key}: the part was removed" for key in before]
    return reasons or ["the feedback changed (same scores)"]


def _part_reasons(key: Any, was: dict[str, Any], now: dict[str, Any]) -> list[str]:
    reasons = []
    if was.get("max_score") != now.get("max_score"):
        reasons.append(f"{key}: points {_number(was.get('max_score'))} → {_number(now.get('max_score'))}")
    same_expected = _same(was.get("expected"), now.get("expected")) or "expected" not in was
    if not same_expected:
        reasons.append(f"{key}: the reference changed (expected {_shown(was.get('expected'))} → "
                       f"{_shown(now.get('expected'))})")
    elif bool(was.get("correct")) != bool(now.get("correct")) and now.get("answer"):
        verdict = "right" if now.get("correct") else "wrong"
        reasons.append(f"{key}: the same answer is now {verdict} against the same expected answer (the tolerance)")
    graded_was = was.get("graded_score", was.get("score"))
    graded_now = now.get("graded_score", now.get("score"))
    if now.get("override") and graded_was != graded_now:
        reasons.append(f"{key}: the override keeps {_number(now.get('score'))} (graded now "
                       f"{_number(graded_now)}, was {_number(graded_was)})")
    elif not reasons and was.get("score") != now.get("score"):
        reasons.append(f"{key}: score {_number(was.get('score'))} → {_number(now.get('score'))} (how the part is "
                       "scored changed)")
    old_feedback = (was.get("diagnosis") or {}).get("kind"), (was.get("diagnosis") or {}).get("paths")
    new_feedback = (now.get("diagnosis") or {}).get("kind"), (now.get("diagnosis") or {}).get("paths")
    if not reasons and old_feedback != new_feedback:
        reasons.append(f"{key}: the feedback changed ({old_feedback[0]} → {new_feedback[0]})")
    return reasons


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "…"


def regrade_preview_compute(*, regrade_id: int) -> None:
    """Grades every graded submission in scope again, writing nothing but the regrade's change list.
    A single-submission regrade then applies itself."""
    regrade = Regrade.objects.filter(id=regrade_id, status=Regrade.Status.PREVIEWING).first()
    if regrade is None:
        return
    regrader = _Regrader(assignment_id=regrade.assignment_id, submission_id=regrade.submission_id)
    changes, checked = [], 0
    try:
        for submission in _graded_rows(regrade):
            checked += 1
            change = _change(submission, regrader.fields(submission))
            if change is not None:
                changes.append(change)
    except ReferenceRunError as exc:
        Regrade.objects.filter(id=regrade.id).update(status=Regrade.Status.FAILED, error=str(exc)[:2000])
        return
    Regrade.objects.filter(id=regrade.id, status=Regrade.Status.PREVIEWING).update(
        status=Regrade.Status.PREVIEWED, changes=changes, checked=checked, previewed_at=clock.now(),
        fingerprint=assignment_fingerprint(assignment=regrader.assignment))
    if regrade.submission_id is not None:
        regrade_apply_start(regrade_id=regrade.id)


def regrade_apply_start(*, regrade_id: int) -> Regrade:
    """previewed → applying, once; then the queue applies it. Raises RegradeError when the preview
    is not ready, was applied already or is stale (the assignment changed since)."""
    with transaction.atomic():
        regrade = Regrade.objects.select_for_update().select_related("assignment").get(id=regrade_id)
        if regrade.status != Regrade.Status.PREVIEWED:
            raise RegradeError(f"This regrade is {regrade.status}: only a finished preview can be applied.")
        stale = assignment_fingerprint(assignment=regrade.assignment) != regrade.fingerprint
        regrade.status = Regrade.Status.STALE if stale else Regrade.Status.APPLYING
        Regrade.objects.filter(id=regrade.id).update(status=regrade.status)
        if not stale:
            transaction.on_commit(lambda: _enqueue("courseops.regrade_apply", regrade_id))
    if stale:
        raise RegradeError("The assignment changed after this preview: preview the regrade again.")
    return regrade


def regrade_apply(*, regrade_id: int) -> None:
    """Replaces the result of every submission the preview listed, each exactly once (a redelivered
    task skips those already done), keeping the old result as a revision."""
    regrade = Regrade.objects.filter(id=regrade_id, status=Regrade.Status.APPLYING).first()
    if regrade is None:
        return
    regrader = _Regrader(assignment_id=regrade.assignment_id, submission_id=regrade.submission_id)
    if assignment_fingerprint(assignment=regrader.assignment) != regrade.fingerprint:
        Regrade.objects.filter(id=regrade.id).update(status=Regrade.Status.STALE)
        return
    try:
        for change in regrade.changes:
            _apply_one(regrade=regrade, regrader=regrader, submission_id=change["submission"])
    except ReferenceRunError as exc:  # the rows done stay done; applying again resumes
        Regrade.objects.filter(id=regrade.id).update(status=Regrade.Status.FAILED, error=str(exc)[:2000])
        return
    done = ResultRevision.objects.filter(regrade=regrade).count()
    Regrade.objects.filter(id=regrade.id).update(status=Regrade.Status.APPLIED, applied=done,
                                                 applied_at=clock.now())


def _apply_one(*, regrade: Regrade, regrader: _Regrader, submission_id: int) -> None:
    """One submission's new result. Its sandbox jobs (code, formula checks) run between short passes,
    never while the transaction holds the row (grading/outside_runs.py)."""
    runs_outside(lambda: _apply_one_pass(regrade=regrade, regrader=regrader, submission_id=submission_id))


def _apply_one_pass(*, regrade: Regrade, regrader: _Regrader, submission_id: int) -> None:
    with transaction.atomic():
        submission = (Submission.objects.select_for_update().select_related("student")
                      .filter(id=submission_id, status=Submission.Status.GRADED).first())
        if submission is None or ResultRevision.objects.filter(submission=submission, regrade=regrade).exists():
            return
        result = Result.objects.get(submission=submission)
        fields = regrader.fields(submission)
        ResultRevision.objects.create(submission=submission, reason=ResultRevision.Reason.REGRADE, regrade=regrade,
                                      score=result.score, max_score=result.max_score, document=result.document,
                                      highlight=result.highlight)
        fields["document"]["regraded"] = {"at": clock.now().isoformat(), "previous_score": result.score,
                                          "previous_max_score": result.max_score, "regrade": regrade.id}
        Result.objects.filter(id=result.id).update(**fields)
