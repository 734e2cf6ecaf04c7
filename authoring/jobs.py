"""Authoring work out of the web request: a preview, an import or an API publish is stored as a job, run by a worker
on the maintenance lane (grader/fairness.py), and polled by the page until it is done or the
page's bounded wait is over. A web request only validates, writes the row and enqueues.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q, Sum
from django.http import Http404

from assignments.access import User
from assignments.models import Assignment, AuthoringJob, Course
from grading.outside_runs import sandbox_allowance
from infra import clock
from infra.enqueue import enqueue
from infra.lanes import MAINTENANCE

log = logging.getLogger(__name__)
# How long a page polls before it says the job did not finish (a sandbox job is killed after 5 s;
# an import vets up to 200 files one after another).
WAIT = {AuthoringJob.Kind.PREVIEW: timedelta(seconds=60), AuthoringJob.Kind.IMPORT: timedelta(minutes=15),
        AuthoringJob.Kind.PUBLISH: timedelta(minutes=2)}
PENDING = (AuthoringJob.Status.QUEUED, AuthoringJob.Status.RUNNING)
KEEP = timedelta(days=1)


class JobRefused(Exception):
    """The instructor has too many jobs waiting or running, or has spent their sandbox time: the message
    says which and when to try again."""


def job_request(*, kind: str, course: Course, user: AbstractBaseUser, payload: dict[str, Any],
                assignment: Assignment | None = None) -> AuthoringJob:
    """Store the job and enqueue it once the transaction commits (the requester's jobs of another
    day are dropped: a job is only what one page polls for). Raises JobRefused past the requester's
    cap of pending jobs (GRADER_AUTHORING_JOBS_PER_USER) or sandbox budget."""
    AuthoringJob.objects.filter(requested_by_id=user.pk, created_at__lt=clock.now() - KEEP).delete()
    _check_allowed(user_id=user.pk)
    job = AuthoringJob.objects.create(kind=kind, course=course, assignment=assignment, requested_by=user,
                                      payload=payload)
    transaction.on_commit(lambda: _enqueue(job.pk))
    return job


def jobs_pending(*, user_id: int) -> int:
    """The requester's jobs waiting or running, not counting those past their kind's wait (a job whose
    worker died is not waited for by any page, and must not hold a slot for a day)."""
    now = clock.now()
    alive = Q()
    for kind, wait in WAIT.items():
        alive |= Q(kind=kind, created_at__gte=now - wait)
    return AuthoringJob.objects.filter(alive, requested_by_id=user_id, status__in=PENDING).count()


def sandbox_seconds_spent(*, user_id: int) -> float:
    """The sandbox time of the requester's jobs over the last GRADER_AUTHORING_BUDGET_WINDOW seconds."""
    since = clock.now() - timedelta(seconds=settings.GRADER_AUTHORING_BUDGET_WINDOW)
    spent = AuthoringJob.objects.filter(requested_by_id=user_id, finished_at__gte=since).aggregate(
        total=Sum("sandbox_seconds"))["total"]
    return float(spent or 0.0)


def sandbox_seconds_left(*, user_id: int) -> float | None:
    budget = settings.GRADER_AUTHORING_BUDGET_SECONDS
    return None if not budget else max(0.0, budget - sandbox_seconds_spent(user_id=user_id))


def _check_allowed(*, user_id: int) -> None:
    cap = settings.GRADER_AUTHORING_JOBS_PER_USER
    if cap and jobs_pending(user_id=user_id) >= cap:
        raise JobRefused(f"You already have {cap} previews, publishes or imports waiting or running "
                         f"(at most {cap} at a time): wait for one to finish, then try again.")
    left = sandbox_seconds_left(user_id=user_id)
    if left is not None and left <= 0:
        window = settings.GRADER_AUTHORING_BUDGET_WINDOW
        raise JobRefused(f"Your previews, publishes and imports have used their sandbox time "
                         f"({settings.GRADER_AUTHORING_BUDGET_SECONDS:g} s in {_minutes(window)}): "
                         f"try again in a few minutes, or make the reference program faster.")


def _minutes(seconds: int) -> str:
    return f"{seconds // 60} minutes" if seconds >= 120 else f"{seconds} s"


def _enqueue(job_id: int) -> None:
    if not enqueue("assignments.run_authoring_job", job_id, lane=MAINTENANCE,
                   if_lost="the job is marked failed and its page says to try again"):
        _finish(job_id, AuthoringJob.Status.FAILED, {"error": "The work queue is unreachable: try again shortly."},
                pending_only=True)


def job_run(*, job_id: int) -> None:
    """The worker side: claim the job once, run it, store what the page shows."""
    if AuthoringJob.objects.filter(pk=job_id, status=AuthoringJob.Status.QUEUED).update(
            status=AuthoringJob.Status.RUNNING) != 1:
        return  # gone, or another delivery has it
    job = AuthoringJob.objects.select_related("course", "assignment", "requested_by").get(pk=job_id)
    # The sandbox time left in the requester's budget bounds this job's runs (grading/outside_runs.py).
    with sandbox_allowance(sandbox_seconds_left(user_id=job.requested_by_id)) as allowance:
        try:
            result = _runner(job.kind)(job)
        except Exception:
            log.exception("authoring job %s failed", job_id)
            _finish(job_id, AuthoringJob.Status.FAILED, {"error": "The job failed on our side (logged)."},
                    sandbox_seconds=allowance.spent)
            return
    _finish(job_id, AuthoringJob.Status.DONE, result, sandbox_seconds=allowance.spent)


def _finish(job_id: int, status: str, result: dict[str, Any], *, pending_only: bool = False,
            sandbox_seconds: float = 0.0) -> None:
    rows = AuthoringJob.objects.filter(pk=job_id)
    if pending_only:
        rows = rows.filter(status__in=PENDING)
    rows.update(status=status, result=result, finished_at=clock.now(), sandbox_seconds=sandbox_seconds)


def _runner(kind: str) -> Callable[[AuthoringJob], dict[str, Any]]:
    from authoring.runs import import_run, preview_run, publish_run

    runners = {AuthoringJob.Kind.PREVIEW: preview_run, AuthoringJob.Kind.IMPORT: import_run,
               AuthoringJob.Kind.PUBLISH: publish_run}
    return runners[AuthoringJob.Kind(kind)]


def job_for_requester_or_404(*, user: User, pk: int) -> AuthoringJob:
    """Only the instructor who asked sees a job (its trial answers and files are theirs)."""
    job = AuthoringJob.objects.select_related("course", "assignment").filter(pk=pk, requested_by_id=user.pk).first()
    if job is None:
        raise Http404("No such job.")
    return job


def job_overdue(*, job: AuthoringJob) -> bool:
    """Still pending past its kind's wait: the page stops polling and says so."""
    return job.status in PENDING and clock.now() - job.created_at > WAIT[AuthoringJob.Kind(job.kind)]

