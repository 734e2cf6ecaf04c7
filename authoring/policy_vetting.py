"""Vetting of the policy: a reveal setting that would show the expected answers to students who can
still submit, or never show them although the instructor asked for a reveal, and a feedback level
that gives the answers away from the first wrong attempt. No sandbox run."""

from __future__ import annotations

from assignments.models import Assignment, Release, release_at_least
from authoring.reasons import Reason

FIELD = "policy.reveal"


def _reason(problem: str) -> Reason:
    return Reason(code=f"reveal-policy:{FIELD}", field=FIELD, problem=problem)


def policy_reasons(*, assignment: Assignment) -> list[Reason]:
    before, after = assignment.releases
    if release_at_least(before, Release.FULL_PICTURE):
        return [Reason(code="release-policy:policy.release_before", field="policy.release_before",
                       problem=f"{before} gives the expected answers away from the first wrong attempt: students "
                               "have nothing left to find on the next one; choose picture or less, or accept")]
    if not release_at_least(after, Release.FULL_PICTURE):
        return []  # the reveal shows no answer: nothing leaks, and nothing is promised
    reveal = assignment.reveal
    if reveal == Assignment.Reveal.AFTER_DUE:
        if assignment.due_at is None:
            return [_reason("after_due without a due date never shows the answers: set due_at or choose another")]
        if assignment.closes_at is None or assignment.closes_at > assignment.due_at:
            return [_reason("after_due shows the expected answers while late submissions are still accepted "
                            "(until closes_at, or with no closing date): reveal after_close, close at the due "
                            "date, or accept")]
    if reveal == Assignment.Reveal.AFTER_CLOSE and assignment.closes_at is None:
        return [_reason("after_close without a closing date never shows the answers: set closes_at")]
    if reveal == Assignment.Reveal.AFTER_ATTEMPTS and assignment.max_attempts is None:
        return [_reason("after_attempts with unlimited attempts never shows the answers: set max_attempts")]
    return []
