"""Manual overrides of one part's score: audited, shown to the student, kept across regrades."""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from chainrule.result import counted_score
from courseops.models import ResultRevision, ScoreOverride
from grader.models import Result, Submission

MAX_COMMENT = 2000


class OverrideError(ValueError):
    """The override cannot be made (no such part, score out of range, no comment)."""


def document_with_overrides(*, document: dict[str, Any], overrides: Iterable[ScoreOverride]) -> dict[str, Any]:
    """A copy of a result document with each overridden part's score replaced (the latest override
    of a part wins) and the document score re-summed (before the late factor)."""
    latest = {override.part: override for override in sorted(overrides, key=lambda o: (o.created_at, o.id))}
    if not latest:
        return document
    changed = copy.deepcopy(document)
    for part in changed["parts"]:
        override = latest.get(part["part"])
        if override is not None:
            part["override"] = {"score": override.score_after, "graded_score": part.get("graded_score", part["score"]),
                                "comment": override.comment, "by": override.by.get_username(),
                                "at": override.created_at.isoformat()}
            part["graded_score"] = part["override"]["graded_score"]
            part["score"] = override.score_after
    changed["score"] = round(sum(part["score"] for part in changed["parts"]), 6)
    return changed


def _checked(*, document: dict[str, Any], part: str, score: float, comment: str) -> dict[str, Any]:
    found = next((p for p in document["parts"] if p["part"] == part), None)
    if found is None:
        raise OverrideError(f"This submission has no part {part[:64]!r}.")
    if not math.isfinite(score) or not 0 <= score <= found["max_score"]:
        raise OverrideError(f"The score must be between 0 and {found['max_score']:g}.")
    if not comment.strip():
        raise OverrideError("Write a comment: the student sees it beside the score.")
    if len(comment) > MAX_COMMENT:
        raise OverrideError(f"The comment is longer than {MAX_COMMENT} characters.")
    return found


def score_override_create(*, submission_id: int, part: str, score: float, comment: str,
                          by: AbstractBaseUser) -> ScoreOverride:
    """Sets one part's score by hand. The result before is kept as a revision; who, when, before
    and after are recorded. Only graded submissions can be overridden. Raises OverrideError."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(id=submission_id)
        result = Result.objects.filter(submission=submission).first()
        if submission.status != Submission.Status.GRADED or result is None:
            raise OverrideError("Only a graded submission can be overridden.")
        found = _checked(document=result.document, part=part, score=score, comment=comment)
        override = ScoreOverride.objects.create(submission=submission, part=part, score_before=found["score"],
                                                score_after=score, comment=comment.strip(), by=by)
        _revision_keep(result=result, reason=ResultRevision.Reason.OVERRIDE, override=override)
        document = document_with_overrides(document=result.document, overrides=[override])
        Result.objects.filter(id=result.id).update(document=document, score=counted_score(document))
    return override


def _revision_keep(*, result: Result, reason: str, override: ScoreOverride) -> None:
    ResultRevision.objects.create(submission_id=result.submission_id, reason=reason, override=override,
                                  score=result.score, max_score=result.max_score, document=result.document,
                                  highlight=result.highlight)


def overrides_of(*, assignment_id: int, submission_id: int | None = None) -> dict[int, list[ScoreOverride]]:
    """Every override of the assignment's submissions (or of one), oldest first, by submission."""
    rows = ScoreOverride.objects.filter(submission__assignment_id=assignment_id).select_related("by")
    if submission_id is not None:
        rows = rows.filter(submission_id=submission_id)
    found: dict[int, list[ScoreOverride]] = {}
    for override in rows:
        found.setdefault(override.submission_id, []).append(override)
    return found
