"""Celery tasks of course operations: load ids, call one service."""

from __future__ import annotations

from celery import shared_task

from courseops.regrades import regrade_apply, regrade_preview_compute


@shared_task(name="courseops.regrade_preview", acks_late=True, reject_on_worker_lost=True,
             soft_time_limit=1500, time_limit=1800)
def regrade_preview(regrade_id: int) -> None:
    regrade_preview_compute(regrade_id=regrade_id)


@shared_task(name="courseops.regrade_apply", acks_late=True, reject_on_worker_lost=True,
             soft_time_limit=1500, time_limit=1800)
def regrade_apply_task(regrade_id: int) -> None:
    regrade_apply(regrade_id=regrade_id)
