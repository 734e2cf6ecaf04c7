"""Stage 3, in a worker: claimed submissions graded against their variant's reference.

Two ways in, one per lane:
- the code lane grades one submission per task (`submission_grade`): its sandbox run takes tens of
  milliseconds, and its time counts against the student's sandbox budget;
- the numeric lane drains (`numeric_drain`): a numeric answer grades in well under a millisecond,
  while a task of its own per submission cost a Celery message and a transaction per row. So a
  submission only makes sure a drain is on its way (queueing.drain_wake), and a drain claims up to
  DRAIN_BATCH due rows at once, grades them and stores their results in one transaction, until none
  is due. Both worker processes drain side by side under load, each claiming its own rows.

Nothing waits for a drain that never comes: the web commits a row before it looks at the drain flag,
and a drain clears the flag before its first claim, then claims until it finds nothing. So either the
row's own call sends a drain, or a drain already waiting has not made its first claim yet. A drain
killed with its worker is delivered again (acks_late); the rows it had claimed are requeued by the
sweeper; a lost flag only sends one more.

A grading that fails is never charged to the student: the sandbox being away requeues the row
(SandboxUnavailable), anything else marks it as an infrastructure error.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.db import transaction
from django.db.models import F

from assignments.models import Variant
from config.structured_logging import submission_context
from grader.fairness import lane_of
from grader.models import Submission
from grader.workflow.claim import DRAIN_BATCH, Claimed, batch_claim, give_back, owned, submission_claim
from grader.workflow.queueing import IF_LOST, drain_flag, drain_wake, held_code_release
from grader.workflow.results import Done, error_store, results_store
from grading.answer_grading import Graded, answers_grade
from grading.reference import ReferenceRunError, SandboxUnavailable
from grading.variants import variant_ready
from infra import clock
from infra.enqueue import enqueue, flag_clear
from infra.lanes import CODE

log = logging.getLogger(__name__)
MAX_DELIVERIES = 5  # a row whose grading started this often is marked as an infrastructure error
DRAIN_SECONDS = 3.0  # a drain claims no new batch after this long; it sends the next drain instead
DRAIN_SLOW_S = 0.2  # a batch taking longer stores what it graded and gives back the rows not begun


def submission_grade(*, submission_id: int) -> None:
    """Claim and grade one submission (the code lane's task). Safe to call twice: the second does nothing."""
    row = submission_claim(submission_id=submission_id)
    if row is None:
        log.info("submission %s is not queued (graded or claimed elsewhere); skipping", submission_id)
        return
    submission = row.submission
    started, recorded = time.monotonic(), False
    try:
        graded = _graded_or_handled(row)
        if graded is not None:
            timing = time.monotonic() - started if submission.lane == CODE else None
            recorded = bool(results_store(token=row.token, done=[Done(row, *graded, timing)]))
    finally:
        if submission.lane == CODE:  # its time counts against the student's budget; free its slot
            if not recorded:  # written with the result when it was graded
                Submission.objects.filter(id=submission_id).update(sandbox_seconds=time.monotonic() - started)
            held_code_release(submission.student_id)


def numeric_drain() -> int:
    """Grade queued numeric submissions in batches until none is left (the numeric lane's task).
    How many it graded or finished otherwise."""
    flag_clear(drain_flag())
    finished, deadline, invited = 0, time.monotonic() + DRAIN_SECONDS, False
    while True:
        rows = batch_claim()
        if not rows:
            return finished
        if len(rows) == DRAIN_BATCH and not invited:  # a backlog: another worker process may join in
            drain_wake()
            invited = True
        try:
            finished += _batch_graded(rows)
        except Exception:  # the database went away mid-batch: hand back what is left, not after 150 s
            _give_back_quietly(rows)
            raise
        if time.monotonic() > deadline:  # leave the worker to other tasks; the next drain goes on
            drain_wake()
            return finished


def graded(*, submission: Submission) -> tuple[Graded, Variant]:
    """The grade of a submission against its variant's current reference. Writes nothing but the variant's
    analysis when it was not computed yet. Raises ReferenceRunError."""
    if submission.variant is None:
        raise ReferenceRunError("the submission has no variant")
    variant = variant_ready(variant=submission.variant, assignment=submission.assignment)  # current reference
    result = answers_grade(assignment=submission.assignment, variant=variant, answers=submission.answers,
                           code=submission.code, expected_shown=True)
    return result, variant


def _batch_graded(rows: list[Claimed]) -> int:
    """Grade a claimed batch and store it; how many rows it finished. A row that grades slowly (a
    formula checked in the sandbox, a new variant's reference run) does not hold up the rest: past
    DRAIN_SLOW_S the rows graded so far are stored and those not begun are given back, for the
    other worker process or this drain's next claim."""
    done: list[Done] = []
    token = rows[0].token
    started = time.monotonic()
    for index, row in enumerate(rows):
        if _moved_to_code_lane(row):
            continue
        with submission_context(row.id):  # what grading and the sandbox client log names the row
            result = _graded_or_handled(row)
        if result is not None:
            done.append(Done(row, *result, None))
        rest = [later.id for later in rows[index + 1:]]
        if rest and time.monotonic() - started > DRAIN_SLOW_S:
            give_back(token=token, ids=rest)  # first: storing marks every row of the claim still running
            results_store(token=token, done=done)
            return index + 1
    results_store(token=token, done=done)
    return len(rows)


def _moved_to_code_lane(row: Claimed) -> bool:
    """A numeric row whose formula now needs SymPy's sandbox check (queued before the part got an author's
    formula, or before formulas took the code lane) goes to the code lane, under the student's cap and
    budget, instead of holding this drain."""
    submission = row.submission
    if lane_of(code=submission.code, answers=submission.answers, assignment=submission.assignment) != CODE:
        return False
    if owned(submission_id=row.id, token=row.token).update(
            status=Submission.Status.QUEUED, claim=None, started_at=None, enqueued_at=None, lane=CODE,
            deliveries=F("deliveries") - 1):
        log.info("formula needs the sandbox: moved to the code lane", extra={"submission_id": row.id})
        transaction.on_commit(lambda: held_code_release(submission.student_id))
    return True


def _give_back_quietly(rows: list[Claimed]) -> None:
    """give_back after a failure, when the database may be gone: then the sweeper requeues them later."""
    ids = [row.id for row in rows]
    try:
        give_back(token=rows[0].token, ids=ids, counted=True)
    except Exception:
        log.warning("could not give back claimed rows %s; the sweeper will requeue them", ids, exc_info=True)


def _graded_or_handled(row: Claimed) -> tuple[Graded, Variant] | None:
    """The grade of a claimed row, or None when grading failed and the row was finished otherwise:
    requeued after a sandbox restart (no loss to the student), else marked as an infrastructure error."""
    submission = row.submission
    try:
        return graded(submission=submission)
    except SandboxUnavailable as exc:
        if submission.deliveries < MAX_DELIVERIES:
            _requeue_later(row)
            return None
        error_store(submission_id=row.id, token=row.token, reason=f"grading infrastructure failed: {exc}")
    except ReferenceRunError as exc:
        error_store(submission_id=row.id, token=row.token, reason=f"grading infrastructure failed: {exc}")
    except Exception:  # a bug must not loop through the sweeper forever; no attempt is charged
        log.exception("grading submission %s failed", row.id, extra={"submission_id": row.id})
        error_store(submission_id=row.id, token=row.token, reason="internal grading error (logged)")
    return None


def _requeue_later(row: Claimed) -> None:
    """Give the row back (queued, unclaimed) and try again in 5, 10, 15, 20 s (a sandbox restart under
    load takes tens of seconds); the sweeper is the safety net. Until then the row is not due
    (enqueued_at in the future): numeric drains pass it over and the sweeper counts from then."""
    submission = row.submission
    delay_s = min(5.0 * submission.deliveries, 30.0)
    if owned(submission_id=row.id, token=row.token).update(
            status=Submission.Status.QUEUED, claim=None, enqueued_at=clock.now() + timedelta(seconds=delay_s)):
        log.warning("sandbox unavailable; submission requeued", extra={"submission_id": row.id})
        enqueue("grader.grade_submission", row.id, lane=submission.lane, countdown=delay_s, if_lost=IF_LOST)
