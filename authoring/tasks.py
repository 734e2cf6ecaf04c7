"""Celery tasks of authoring: load ids, call one service."""

from __future__ import annotations

from celery import shared_task

from authoring.jobs import job_run


@shared_task(name="assignments.run_authoring_job", acks_late=True, reject_on_worker_lost=True,
             soft_time_limit=1200, time_limit=1260)
def run_authoring_job(job_id: int) -> None:
    """Sent to the maintenance queue (authoring/jobs.py): a preview or an import."""
    job_run(job_id=job_id)
