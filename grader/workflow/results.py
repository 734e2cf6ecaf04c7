"""Stage 4, in a worker: grades become Results the student can read.

The results of a claim are stored in one transaction with the graded mark, only for the rows the
claim still owns. Once committed: the requests waiting for them are woken (grader/finished.py) and
the latency counted, in one Redis round trip; then the apps built on grading hear that these
students' scores changed (GRADER_SCORES_CHANGED_HOOK: the LMS gradebook), after the wake-ups so that
no waiter waits for an LMS.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any, NamedTuple

from django.db import transaction
from django.db.models import QuerySet

from assignments.models import Variant
from chainrule.result import counted_score
from grader import hooks
from grader.finished import finished_announce
from grader.metrics import counter_increment, latency_commands
from grader.models import Result, Submission
from grader.policy import LOOKUP, Known, window_at
from grader.workflow.claim import Claimed, owned
from grading.answer_grading import Graded, wrong_highlight
from infra import clock
from infra.prepared import prepared_update

log = logging.getLogger(__name__)


class Done(NamedTuple):
    """A claimed row graded: its grade, the variant it was graded against, a code row's sandbox time."""

    row: Claimed
    graded: Graded
    variant: Variant
    sandbox_seconds: float | None


def result_fields(*, submission: Submission, graded: Graded, extension: Known = LOOKUP) -> dict[str, Any]:
    """score (the counted score: after the late factor), max_score, document and highlight of a Result.
    `extension`: the student's, when the caller read it with the submission."""
    window = window_at(assignment=submission.assignment, at=submission.created_at,
                       student_id=submission.student_id, extension=extension)
    document = {**graded.document, "late_factor": window.late_factor}
    if window.is_late:
        document["hours_late"] = round(window.hours_late, 3)
    highlight = {"parts": {key: wrong_highlight({key: diagnosis}).to_json()
                           for key, diagnosis in graded.diagnoses.items()}}
    return {"score": counted_score(document), "max_score": document["max_score"], "document": document,
            "highlight": highlight}


def results_store(*, token: uuid.UUID, done: list[Done]) -> set[int]:
    """Store the results of the rows this claim still owns (with a code row's sandbox time, when given)
    in one transaction; the ids it stored. `done` holds every row of the claim still running (the
    others were requeued or marked as errors). A row the sweeper handed to another run keeps that
    run's result."""
    if not done:
        return set()
    fields = {item.row.id: result_fields(submission=item.row.submission, graded=item.graded,
                                         extension=item.row.extension) for item in done}
    with transaction.atomic():
        graded_at = clock.now()
        changed = _mark_graded(token=token, now=graded_at)
        if changed == len(done):
            owned_ids = {item.row.id for item in done}
        else:  # the sweeper took some back (rare): which of them this run marked just now
            owned_ids = set(Submission.objects.filter(id__in=[item.row.id for item in done], claim=token,
                                                      graded_at=graded_at).values_list("id", flat=True))
        mine = [item for item in done if item.row.id in owned_ids]
        if not mine:
            return set()
        for item in mine:  # the reference changed since, or code: rare
            if item.variant.id != item.row.submission.variant_id or item.sandbox_seconds is not None:
                timing = {} if item.sandbox_seconds is None else {"sandbox_seconds": item.sandbox_seconds}
                Submission.objects.filter(id=item.row.id).update(variant_id=item.variant.id, **timing)
        Result.objects.bulk_create(  # one upsert: an earlier run's result is rewritten (idempotent)
            [Result(submission_id=item.row.id, **fields[item.row.id]) for item in mine],
            update_conflicts=True, unique_fields=["submission"], update_fields=list(fields[mine[0].row.id]))
        latencies = [(item.row.submission.lane, (graded_at - item.row.submission.created_at).total_seconds())
                     for item in mine]
        transaction.on_commit(lambda: finished_announce(  # once readable; the latency metric in the same trip
            submission_ids=[item.row.id for item in mine],
            then=lambda pipe: [latency_commands(pipe, lane=lane, seconds=[t for where, t in latencies if where == lane])
                               for lane in {lane for lane, _ in latencies}]))
        changed_scores = [(item.row.id, item.row.submission.student_id) for item in mine]
        transaction.on_commit(lambda: hooks.scores_changed(changed_scores))  # after the wake-ups
    for item, (_, seconds) in zip(mine, latencies, strict=True):
        _observe(submission=item.row.submission, graded=item.graded, seconds=seconds)
    return owned_ids


def error_store(*, submission_id: int, token: uuid.UUID, reason: str) -> None:
    """Infrastructure failure: marked as such, and it costs the student no attempt."""
    if owned(submission_id=submission_id, token=token).update(
            status=Submission.Status.ERROR, error_reason=reason[:2000], attempt=None, graded_at=clock.now()):
        finished_announce(submission_ids=[submission_id])


@prepared_update
def _mark_graded(token: uuid.UUID, now: datetime) -> tuple[QuerySet[Submission], dict[str, Any]]:
    """Every row of this claim still running, graded (the sweeper may have handed one to another run)."""
    return Submission.objects.filter(claim=token, status=Submission.Status.RUNNING), {
        "status": Submission.Status.GRADED, "graded_at": now}


def _observe(*, submission: Submission, graded: Graded, seconds: float) -> None:
    for key in submission.code:
        if key in graded.diagnoses:
            counter_increment(name="sandbox_outcomes", label=graded.diagnoses[key].kind)
    log.info("submission graded", extra={"submission_id": submission.id, "lane": submission.lane,
                                         "seconds": round(seconds, 4)})
