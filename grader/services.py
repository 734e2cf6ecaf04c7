"""The grading workflow: create a submission, claim it, grade it, sweep stuck rows.

Preconditions are stated per function. Every write a user sees goes through here.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet

from assignments.models import Assignment, Extension, Membership, Variant
from config.structured_logging import submission_context
from grader.fairness import held_release, lane_of, students_with_held
from grader.finished import finished_announce
from grader.metrics import latency_commands
from grader.models import Result, Submission
from grader.policy import (
    LOOKUP,
    Known,
    PolicyError,
    RateLimited,
    _now,
    attempts_left,
    extension_of,
    extra_attempts,
    window_at,
)
from grader.selectors import assignment_parts_attach
from grading.answer_grading import Graded, answers_grade, wrong_highlight
from grading.answer_parsing import answers_parse
from grading.reference import ReferenceError
from grading.variants import params_for_student, variant_id_for, variant_ready
from infra.fast_publish import flag_clear, task_publish, task_publish_once
from infra.lanes import CODE, NUMERIC, queue_name
from infra.prepared import prepared_query, prepared_update
from lti.scores import lms_user_exists, lti_score_publish_later

log = logging.getLogger(__name__)
Done = tuple[Submission, Graded, Variant, float | None]  # a graded row, its variant, a code row's sandbox time
MAX_DELIVERIES = 5  # a row whose grading started this often is marked as an infrastructure error


class AlreadySubmitted(Exception):
    """The client sent this Idempotency-Key before: `submission` is what it made then. `same`: with the
    same assignment, answers and code (a retry), else the key was reused for something else."""

    def __init__(self, submission: Submission, *, same: bool) -> None:
        super().__init__(f"submission {submission.id} has this idempotency key")
        self.submission, self.same = submission, same


def _replayed(*, student: AbstractBaseUser, assignment: Assignment, answers: Mapping[str, Any],
              code: Mapping[str, Any], key: str | None) -> None:
    """Raises AlreadySubmitted when the student made a submission with this key."""
    if key is None:
        return
    earlier = _keyed.first(student_id=student.pk, key=key)
    if earlier is not None:
        same = earlier.assignment_id == assignment.id and earlier.answers == dict(answers) \
            and earlier.code == dict(code)
        raise AlreadySubmitted(earlier, same=same)


@prepared_query
def _keyed(student_id: int, key: str) -> QuerySet[Submission]:
    return Submission.objects.filter(student_id=student_id, idempotency_key=key)[:1]


def submission_create(
    *, student: AbstractBaseUser, assignment: Assignment, answers: Mapping[str, Any], code: Mapping[str, Any],
    idempotency_key: str | None = None,
) -> Submission:
    """Validate, store as queued and enqueue grading after commit (code: held until a slot is free).

    Raises AnswerErrors (unreadable answers, no attempt used), PolicyError, or AlreadySubmitted when
    `idempotency_key` names an earlier submission of the student (checked before anything else, so a
    retry after the deadline or the rate limit still gets the submission made in time).
    """
    _replayed(student=student, assignment=assignment, answers=answers, code=code, key=idempotency_key)
    answers_parse(assignment=assignment, answers=answers, code=code)
    known_none = getattr(assignment, "has_extension", None) is False  # read with the assignment (the API's)
    extension = None if known_none else extension_of(assignment=assignment, student_id=student.pk)
    window = window_at(assignment=assignment, student_id=student.pk, extension=extension)
    if not window.is_open:
        raise PolicyError(window.reason)
    params = params_for_student(assignment=assignment, student_id=student.pk)
    variant_id = variant_id_for(assignment=assignment, params=params)
    try:
        return _stored(student=student, assignment=assignment, answers=answers, code=code, key=idempotency_key,
                       extension=extension, variant_id=variant_id)
    except IntegrityError:  # the key's unique constraint: a concurrent retry won the race
        _replayed(student=student, assignment=assignment, answers=answers, code=code, key=idempotency_key)
        raise


def _stored(*, student: AbstractBaseUser, assignment: Assignment, answers: Mapping[str, Any],
            code: Mapping[str, Any], key: str | None, extension: Extension | None, variant_id: int) -> Submission:
    """The row, written under the student's lock after the attempt and rate checks."""
    with transaction.atomic():
        _lock_membership(student=student, assignment=assignment)
        # Again under the student's lock: two concurrent retries make one submission.
        _replayed(student=student, assignment=assignment, answers=answers, code=code, key=key)
        counts = _recent_counts(student=student, assignment=assignment)
        extra = extra_attempts(assignment=assignment, student_id=student.pk, extension=extension)
        if attempts_left(assignment=assignment, used=counts["used"], extra=extra) == 0:
            raise PolicyError(f"You have used all {(assignment.max_attempts or 0) + extra} attempts.")
        _check_rate(assignment=assignment, counts=counts)
        lane = lane_of(code=code)
        submission = Submission.objects.create(
            student=student, assignment=assignment, variant_id=variant_id, answers=dict(answers), code=dict(code),
            attempt=counts["used"] + 1, lane=lane, enqueued_at=_now() if lane == NUMERIC else None,
            idempotency_key=key,
        )
        if lane == NUMERIC:
            transaction.on_commit(lambda: _enqueue(submission.id, NUMERIC))
        else:
            transaction.on_commit(lambda: _release(student.pk))
    log.info("submission created", extra={"submission_id": submission.id, "lane": lane})
    return submission


def _lock_membership(*, student: AbstractBaseUser, assignment: Assignment) -> None:
    """Serialises a student's submissions so attempt numbers never collide. Call inside a transaction."""
    if not _membership_locked(user_id=student.pk, course_id=assignment.course_id):
        raise PolicyError("You are not enrolled in the course of this assignment.")


@prepared_query
def _membership_locked(user_id: int, course_id: int) -> QuerySet[Membership]:
    return Membership.objects.select_for_update().filter(user_id=user_id, course_id=course_id).values_list(
        "id", flat=True)[:1]


def _recent_counts(*, student: AbstractBaseUser, assignment: Assignment) -> dict[str, int]:
    """In one query: attempts used on this assignment, and submissions in the last minute overall and on it."""
    since = _now() - timedelta(minutes=1)
    counts: list[dict[str, int]] = _counts(student_id=student.pk, assignment_id=assignment.id, since=since)
    return counts[0] if counts else {"used": 0, "recent": 0, "recent_here": 0}


@prepared_query
def _counts(student_id: int, assignment_id: int, since: datetime) -> QuerySet[Submission, dict[str, int]]:
    recent, here = Q(created_at__gte=since), Q(assignment_id=assignment_id)
    return Submission.objects.filter(student_id=student_id).values("student_id").annotate(
        used=Count("id", filter=here & Q(attempt__isnull=False)), recent=Count("id", filter=recent),
        recent_here=Count("id", filter=recent & here)).values("used", "recent", "recent_here").order_by()


def _check_rate(*, assignment: Assignment, counts: dict[str, int]) -> None:
    """At most GRADER_RATE_LIMIT submissions per student per minute over all assignments, and at most the
    assignment's own rate limit on it when it sets one (0 or empty: none of its own)."""
    limits = ((settings.GRADER_RATE_LIMIT, counts["recent"]), (assignment.rate_limit, counts["recent_here"]))
    for limit, count in limits:
        if limit and count >= limit:
            from grader.metrics import throttled_count

            throttled_count(reason="rate")
            raise RateLimited(f"Too many submissions: at most {limit} a minute. Wait a little and submit again.")


def attempts_used(*, student: AbstractBaseUser, assignment: Assignment) -> int:
    return Submission.objects.filter(student=student, assignment=assignment, attempt__isnull=False).count()


def _enqueue(submission_id: int, lane: str) -> None:
    """A code submission gets a task of its own; a numeric one makes sure a drain is on its way."""
    from grader.tasks import grade_numeric, grade_submission

    try:
        if lane == NUMERIC:
            queue = queue_name(lane=NUMERIC)
            task_publish_once(grade_numeric, args=[], queue=queue, flag=_drain_flag(queue), ttl_s=DRAIN_FLAG_S)
        else:
            task_publish(grade_submission, args=[submission_id], queue=queue_name(lane=lane))
    except Exception:  # broker down: the row stays queued and the sweeper re-enqueues it
        what = "wake a numeric drain" if lane == NUMERIC else f"enqueue submission {submission_id}"
        log.exception("could not %s; the sweeper will retry", what, extra={"submission_id": submission_id or None})


def _drain_flag(queue: str) -> str:
    return f"grader:{queue}:drain-queued"


def _release(student_id: int) -> list[int]:
    try:
        return held_release(student_id=student_id, enqueue=_enqueue)
    except Exception:  # the sweeper releases them later; never fail the request or the task for it
        log.exception("could not release held code submissions of student %s", student_id)
        return []


def submission_claim(*, submission_id: int) -> uuid.UUID | None:
    """Move queued → running for exactly one worker run; None when someone else has it."""
    token = uuid.uuid4()
    claimed = _claim(submission_id=submission_id, token=token, now=_now())
    return token if claimed == 1 else None


@prepared_update
def _claim(submission_id: int, token: uuid.UUID, now: datetime) -> tuple[QuerySet[Submission], dict[str, Any]]:
    return Submission.objects.filter(id=submission_id, status=Submission.Status.QUEUED), {
        "status": Submission.Status.RUNNING, "claim": token, "started_at": now, "deliveries": F("deliveries") + 1}


def submission_grade(*, submission_id: int) -> None:
    """Claim and grade one submission. Safe to call twice: the second call does nothing."""
    token = submission_claim(submission_id=submission_id)
    if token is None:
        log.info("submission %s is not queued (graded or claimed elsewhere); skipping", submission_id)
        return
    submission = _grading_row(submission_id=submission_id)
    started, recorded = time.monotonic(), False
    try:
        graded = _graded_or_handled(submission=submission, token=token)
        if graded is not None:
            timing = time.monotonic() - started if submission.lane == CODE else None
            recorded = bool(_finish_graded(token=token, done=[(submission, *graded, timing)]))
    finally:
        if submission.lane == CODE:  # its time counts against the student's budget; free its slot
            if not recorded:  # written with the result when it was graded
                Submission.objects.filter(id=submission_id).update(sandbox_seconds=time.monotonic() - started)
            _release(submission.student_id)


DRAIN_BATCH = 8  # numeric rows claimed at once: one claim, one transaction for their results
DRAIN_SECONDS = 3.0  # a drain claims no new batch after this long; it sends the next drain instead
DRAIN_FLAG_S = 5  # a queued drain's flag lives this long, should its message be lost
DRAIN_SLOW_S = 0.2  # a batch taking longer stores what it graded and gives back the rows not begun
CLOCK_SLACK = timedelta(seconds=1)  # web and worker hosts' clocks may differ this much (a requeue waits ≥ 5 s)


def numeric_drain() -> int:
    """Grade queued numeric submissions in batches until none is left (the numeric lane's task).
    How many it graded or finished otherwise.

    A numeric answer grades in well under a millisecond, while a task of its own per submission
    cost a Celery message published by the web and consumed, acknowledged and traced by a worker,
    and a transaction per row. So a submission only makes sure a drain is on its way (`_enqueue`: one
    Redis round trip, sending one unless a flag says one already waits), and a drain claims up to
    DRAIN_BATCH rows at once, grades them and stores their results in one transaction. Both worker
    processes drain side by side under load, each claiming its own rows (SKIP LOCKED on PostgreSQL).

    Nothing waits for a drain that never comes: the web commits a row before it looks at the flag,
    and a drain clears the flag before its first claim, then claims until it finds nothing. So either
    the row's own call sends a drain, or a drain already waiting has not made its first claim yet.
    A drain killed with its worker is delivered again (acks_late); the rows it had claimed are
    requeued by the sweeper, as a single claimed row always was; a lost flag only sends one more.
    """
    from config.celery_app import app

    queue = queue_name(lane=NUMERIC)
    try:
        flag_clear(app, _drain_flag(queue))
    except Exception:  # Redis unreachable: the flag expires by itself within DRAIN_FLAG_S
        log.warning("could not clear the drain flag", exc_info=True)
    finished, deadline, invited = 0, time.monotonic() + DRAIN_SECONDS, False
    while True:
        token, rows = _claim_batch()
        if not rows:
            return finished
        if len(rows) == DRAIN_BATCH and not invited:  # a backlog: another worker process may join in
            _enqueue(0, NUMERIC)
            invited = True
        try:
            finished += _batch_graded(token=token, rows=rows)
        except Exception:  # the database went away mid-batch: hand back what is left, not after 150 s
            _give_back_quietly(token=token, ids=[row.id for row in rows])
            raise
        if time.monotonic() > deadline:  # leave the worker to other tasks; the next drain goes on
            _enqueue(0, NUMERIC)
            return finished


def _batch_graded(*, token: uuid.UUID, rows: list[Submission]) -> int:
    """Grade a claimed batch and store it; how many rows it finished. A row that grades slowly (a
    formula checked in the sandbox, a new variant's reference run) does not hold up the rest: past
    DRAIN_SLOW_S the rows graded so far are stored and those not begun are given back, for the
    other worker process or this drain's next claim."""
    done: list[Done] = []
    started = time.monotonic()
    for index, row in enumerate(rows):
        with submission_context(row.id):  # what grading and the sandbox client log names the row
            graded = _graded_or_handled(submission=row, token=token)
        if graded is not None:
            done.append((row, *graded, None))
        rest = [later.id for later in rows[index + 1:]]
        if rest and time.monotonic() - started > DRAIN_SLOW_S:
            _give_back(token=token, ids=rest)  # first: storing marks every row of the claim still running
            _finish_graded(token=token, done=done)
            return index + 1
    _finish_graded(token=token, done=done)
    return len(rows)


def _give_back(*, token: uuid.UUID, ids: list[int], counted: bool = False) -> None:
    """Claimed rows still running, queued again; their claim does not count as a delivery unless
    `counted` (after a failure, so that a row that keeps failing is given up on all the same)."""
    Submission.objects.filter(id__in=ids, claim=token, status=Submission.Status.RUNNING).update(
        status=Submission.Status.QUEUED, claim=None, started_at=None,
        deliveries=F("deliveries") - (0 if counted else 1))


def _give_back_quietly(*, token: uuid.UUID, ids: list[int]) -> None:
    """_give_back after a failure, when the database may be gone: then the sweeper requeues them later."""
    try:
        _give_back(token=token, ids=ids, counted=True)
    except Exception:
        log.warning("could not give back claimed rows %s; the sweeper will requeue them", ids, exc_info=True)


def _claim_batch() -> tuple[uuid.UUID, list[Submission]]:
    """Up to DRAIN_BATCH queued numeric rows that are due, oldest first, moved to running under one
    claim token, and read as _grading_row reads one (rows of one assignment share its object)."""
    token, now = uuid.uuid4(), _now()
    due_by = now + CLOCK_SLACK  # a row the web stamped by a clock a little ahead is due all the same
    claim = {"status": Submission.Status.RUNNING, "claim": token, "started_at": now, "deliveries": F("deliveries") + 1}
    if connection.features.has_select_for_update_skip_locked:  # PostgreSQL: skip the rows another drain takes
        with transaction.atomic():  # the row locks hold until the claim commits
            ids: list[int] = _due_locked(now=due_by)
            claimed = Submission.objects.filter(id__in=ids).update(**claim) if ids else 0
    else:  # SQLite: look without the write lock (most looks find nothing); the checks again settle races
        claimed = 0
        for _ in range(3):  # rows seen but taken by another drain meanwhile: look again, there may be more
            ids = _due(now=due_by)
            claimed = Submission.objects.filter(id__in=ids, status=Submission.Status.QUEUED,
                                                enqueued_at__lte=due_by).update(**claim) if ids else 0
            if claimed or not ids:
                break
    if not claimed:
        return token, []
    rows: list[Submission] = _claimed_rows(token=token)
    assignments: dict[int, Any] = {}
    for row in rows:
        if row.assignment_id not in assignments:
            assignment_parts_attach(row.assignment)
            assignments[row.assignment_id] = row.assignment
        row.assignment = assignments[row.assignment_id]
    return token, rows


def _due_rows(now: datetime) -> QuerySet[Submission, int]:
    due = Submission.objects.filter(status=Submission.Status.QUEUED, lane=NUMERIC, enqueued_at__lte=now)
    return due.order_by("id").values_list("id", flat=True)[:DRAIN_BATCH]


@prepared_query
def _due(now: datetime) -> QuerySet[Submission, int]:
    return _due_rows(now)


@prepared_query
def _due_locked(now: datetime) -> QuerySet[Submission, int]:
    return _due_rows(now).select_for_update(skip_locked=True)


@prepared_query
def _claimed_rows(token: uuid.UUID) -> QuerySet[Submission]:
    return _grading_rows().filter(claim=token, status=Submission.Status.RUNNING).order_by("id")  # status: indexed


def _graded_or_handled(*, submission: Submission, token: uuid.UUID) -> tuple[Graded, Variant] | None:
    """The grade of a claimed row, or None when grading failed and the row was finished otherwise:
    requeued after a sandbox restart (no loss to the student), else marked as an infrastructure error."""
    try:
        return _graded(submission=submission)
    except ReferenceError as exc:
        if str(exc).startswith("sandbox unavailable") and submission.deliveries < MAX_DELIVERIES:
            _requeue_later(submission=submission, token=token)
            return None
        _finish_error(submission_id=submission.id, token=token, reason=f"grading infrastructure failed: {exc}")
    except Exception:  # a bug must not loop through the sweeper forever; no attempt is charged
        log.exception("grading submission %s failed", submission.id, extra={"submission_id": submission.id})
        _finish_error(submission_id=submission.id, token=token, reason="internal grading error (logged)")
    return None


def _grading_row(*, submission_id: int) -> Submission:
    """The submission with what grading reads, in two queries: its assignment (without the draft) and
    parts, its variant without the analyses (parsed once per process, grading/variants.py), and
    whether the student has an extension or came from an LMS (most have neither: no further query)."""
    submission: Submission | None = _for_grading.first(submission_id=submission_id)
    if submission is None:
        raise Submission.DoesNotExist(f"no submission {submission_id}")
    assignment_parts_attach(submission.assignment)
    return submission


def _grading_rows() -> QuerySet[Submission]:
    extension = Extension.objects.filter(assignment_id=OuterRef("assignment_id"), student_id=OuterRef("student_id"))
    return (Submission.objects.select_related("assignment", "variant")
            .defer("assignment__draft", "variant__analysis", "variant__point_analyses")
            .annotate(has_extension=Exists(extension), from_lms=lms_user_exists()))


@prepared_query
def _for_grading(submission_id: int) -> QuerySet[Submission]:
    return _grading_rows().filter(id=submission_id)


def _extension_known(submission: Submission) -> Known:
    """None when the grading row says the student has no extension; else read it."""
    return None if getattr(submission, "has_extension", None) is False else LOOKUP


def _graded(*, submission: Submission) -> tuple[Graded, Variant]:
    if submission.variant is None:
        raise ReferenceError("the submission has no variant")
    variant = variant_ready(variant=submission.variant, assignment=submission.assignment)  # current reference
    graded = answers_grade(assignment=submission.assignment, variant=variant, answers=submission.answers,
                           code=submission.code, show_expected=True)
    return graded, variant


def submission_regraded(*, submission: Submission) -> tuple[dict[str, Any], Variant]:
    """The Result fields grading this submission now would store, and the variant graded with.

    Writes nothing (course operations preview and apply regrades with it). Raises ReferenceError.
    """
    graded, variant = _graded(submission=submission)
    return result_fields(submission=submission, graded=graded), variant


def result_fields(*, submission: Submission, graded: Graded) -> dict[str, Any]:
    """score (after the late factor), max_score, document and highlight of a Result."""
    window = window_at(assignment=submission.assignment, at=submission.created_at,
                       student_id=submission.student_id, extension=_extension_known(submission))
    document = {**graded.document, "late_factor": window.late_factor}
    highlight = {"parts": {key: wrong_highlight({key: diagnosis}).to_json()
                           for key, diagnosis in graded.diagnoses.items()}}
    score = round(document["score"] * window.late_factor, 6)
    return {"score": score, "max_score": document["max_score"], "document": document, "highlight": highlight}


def _finish_graded(*, token: uuid.UUID, done: list[Done]) -> set[int]:
    """Store the results of the rows this claim still owns (with a code row's sandbox time, when given)
    in one transaction; the ids it stored. `done` holds every row of the claim still running (the
    others were requeued or marked as errors). A row the sweeper handed to another run keeps that
    run's result."""
    if not done:
        return set()
    fields = {submission.id: result_fields(submission=submission, graded=graded)
              for submission, graded, _, _ in done}
    with transaction.atomic():
        graded_at = _now()
        changed = _mark_graded(token=token, now=graded_at)
        if changed == len(done):
            owned = {submission.id for submission, *_ in done}
        else:  # the sweeper took some back (rare): which of them this run marked just now
            owned = set(Submission.objects.filter(id__in=[row.id for row, *_ in done], claim=token,
                                                  graded_at=graded_at).values_list("id", flat=True))
        mine = [item for item in done if item[0].id in owned]
        if not mine:
            return set()
        for submission, _, variant, sandbox_seconds in mine:  # the reference changed since, or code: rare
            if variant.id != submission.variant_id or sandbox_seconds is not None:
                timing = {} if sandbox_seconds is None else {"sandbox_seconds": sandbox_seconds}
                Submission.objects.filter(id=submission.id).update(variant_id=variant.id, **timing)
        Result.objects.bulk_create(  # one upsert: an earlier run's result is rewritten (idempotent)
            [Result(submission_id=submission.id, **fields[submission.id]) for submission, *_ in mine],
            update_conflicts=True, unique_fields=["submission"], update_fields=list(fields[mine[0][0].id]))
        latencies = [(submission.lane, (graded_at - submission.created_at).total_seconds())
                     for submission, *_ in mine]
        transaction.on_commit(lambda: finished_announce(  # once readable; the latency metric in the same trip
            submission_ids=[submission.id for submission, *_ in mine],
            then=lambda pipe: [latency_commands(pipe, lane=lane, seconds=[t for where, t in latencies if where == lane])
                               for lane in {lane for lane, _ in latencies}]))
        for submission, *_ in mine:  # after the wake-ups: waiters need not wait for the LMS check
            transaction.on_commit(functools.partial(  # the LMS gradebook (AGS)
                _lti_publish, submission_id=submission.id, student_id=submission.student_id,
                lms_user=getattr(submission, "from_lms", None)))
    for (submission, graded, *_), (_, seconds) in zip(mine, latencies, strict=True):
        _observe(submission=submission, graded=graded, seconds=seconds)
    return owned


def _lti_publish(*, submission_id: int, student_id: int, lms_user: bool | None) -> None:
    with submission_context(submission_id):  # what it logs names the submission, after the batch too
        lti_score_publish_later(submission_id=submission_id, student_id=student_id, lms_user=lms_user)


@prepared_update
def _mark_graded(token: uuid.UUID, now: datetime) -> tuple[QuerySet[Submission], dict[str, Any]]:
    """Every row of this claim still running, graded (the sweeper may have handed one to another run)."""
    return Submission.objects.filter(claim=token, status=Submission.Status.RUNNING), {
        "status": Submission.Status.GRADED, "graded_at": now}


def _owned(*, submission_id: int, token: uuid.UUID) -> QuerySet[Submission]:
    """The row while this run's claim holds it: every write of a result, an error or a requeue goes through it."""
    return Submission.objects.filter(id=submission_id, claim=token, status=Submission.Status.RUNNING)


def _observe(*, submission: Submission, graded: Graded, seconds: float) -> None:
    from grader.metrics import counter_increment

    for key in submission.code:
        if key in graded.diagnoses:
            counter_increment(name="sandbox_outcomes", label=graded.diagnoses[key].kind)
    log.info("submission graded", extra={"submission_id": submission.id, "lane": submission.lane,
                                         "seconds": round(seconds, 4)})


def _requeue_later(*, submission: Submission, token: uuid.UUID) -> None:
    """Give the row back (queued, unclaimed) and try again in 5, 10, 15, 20 s (a sandbox restart under
    load takes tens of seconds); the sweeper is the safety net. Until then the row is not due
    (enqueued_at in the future): numeric drains pass it over and the sweeper counts from then."""
    from grader.tasks import grade_submission

    delay_s = min(5.0 * submission.deliveries, 30.0)

    if _owned(submission_id=submission.id, token=token).update(
            status=Submission.Status.QUEUED, claim=None, enqueued_at=_now() + timedelta(seconds=delay_s)):
        log.warning("sandbox unavailable; submission requeued", extra={"submission_id": submission.id})
        try:
            grade_submission.apply_async(args=[submission.id], queue=queue_name(lane=submission.lane),
                                         countdown=delay_s)
        except Exception:
            log.exception("could not requeue submission %s; the sweeper will", submission.id)


def _finish_error(*, submission_id: int, token: uuid.UUID, reason: str) -> None:
    """Infrastructure failure: marked as such, and it costs the student no attempt."""
    if _owned(submission_id=submission_id, token=token).update(
            status=Submission.Status.ERROR, error_reason=reason[:2000], attempt=None, graded_at=_now()):
        finished_announce(submission_ids=[submission_id])


def submissions_sweep(*, queued_after: timedelta, running_after: timedelta) -> list[int]:
    """Re-enqueue rows whose message was lost or whose worker died. Returns their ids."""
    now = _now()
    running = Submission.objects.filter(status=Submission.Status.RUNNING, started_at__lt=now - running_after)
    running_ids = list(running.values_list("id", flat=True)[:500])
    # A row whose grading started this often without finishing kills its worker: stop retrying it.
    stale = Submission.objects.filter(  # re-checked: an overlapping sweep may have requeued it meanwhile
        id__in=running_ids, status=Submission.Status.RUNNING, started_at__lt=now - running_after
    )
    given_up = stale.filter(deliveries__gte=MAX_DELIVERIES)
    given_up_ids = list(given_up.values_list("id", flat=True))
    if given_up.filter(id__in=given_up_ids).update(
            status=Submission.Status.ERROR, attempt=None, graded_at=now, claim=None,
            error_reason=f"grading started {MAX_DELIVERIES} times without finishing"):
        finished_announce(submission_ids=given_up_ids)
    stale.update(status=Submission.Status.QUEUED, claim=None)
    queued = Submission.objects.filter(  # held code rows (no enqueued_at) are released below instead
        Q(enqueued_at__isnull=True, lane=NUMERIC) | Q(enqueued_at__lt=now - queued_after) | Q(id__in=running_ids),
        status=Submission.Status.QUEUED,
    )
    rows = sorted(queued.values_list("id", "lane")[:500])
    Submission.objects.filter(id__in=[submission_id for submission_id, _ in rows]).update(enqueued_at=now)
    for submission_id, lane in rows:
        _enqueue(submission_id, lane)
    released = [submission_id for student_id in students_with_held() for submission_id in _release(student_id)]
    return [submission_id for submission_id, _ in rows] + released


def sweep_defaults() -> dict[str, timedelta]:
    return {
        "queued_after": timedelta(seconds=settings.GRADER_SWEEP_QUEUED_AFTER),
        "running_after": timedelta(seconds=settings.GRADER_SWEEP_RUNNING_AFTER),
    }


BENCH_NOOP = "bench no-op round trip"


def bench_noop_finish(*, submission_id: int) -> None:
    Submission.objects.filter(id=submission_id, status=Submission.Status.ERROR, error_reason=BENCH_NOOP).update(
        graded_at=_now())
