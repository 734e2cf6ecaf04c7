"""Stage 5, on the maintenance lane every GRADER_SWEEP_EVERY seconds: nothing stays queued or running forever.

A row whose message was lost (the broker restarted) or whose worker died mid-grade is enqueued again;
one whose grading started MAX_DELIVERIES times without finishing is marked as an infrastructure error
(it would kill every worker it reached); held code rows are released when their student has room.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Q

from grader.fairness import students_with_held
from grader.finished import finished_announce
from grader.models import Submission
from grader.workflow.grade import MAX_DELIVERIES
from grader.workflow.queueing import held_code_release, submission_enqueue
from infra import clock
from infra.lanes import NUMERIC


def submissions_sweep(*, queued_after: timedelta, running_after: timedelta) -> list[int]:
    """Re-enqueue rows whose message was lost or whose worker died. Returns their ids."""
    now = clock.now()
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
        submission_enqueue(submission_id, lane)
    released = [submission_id for student_id in students_with_held() for submission_id in held_code_release(student_id)]
    return [submission_id for submission_id, _ in rows] + released


def sweep_defaults() -> dict[str, timedelta]:
    return {
        "queued_after": timedelta(seconds=settings.GRADER_SWEEP_QUEUED_AFTER),
        "running_after": timedelta(seconds=settings.GRADER_SWEEP_RUNNING_AFTER),
    }
