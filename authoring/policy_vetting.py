"""Vetting of the policy: a reveal setting that would show the expected answers to students who can
still submit, or never show them although the instructor asked for a reveal. No sandbox run."""

from __future__ import annotations

from assignments.models import Assignment
from authoring.reasons import Reason

FIELD = "policy.reveal"


def _reason(problem: str) -> Reason:
    return Reason(code=f"reveal-policy:{FIELD}", field=FIELD, problem=problem)


def policy_reasons(*, assignment: Assignment) -> list[Reason]:
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
