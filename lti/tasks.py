"""Celery tasks of the LTI tool: load ids, call one service."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from lti.nrps_sync import roster_sync
from lti.platform_client import PlatformError
from lti.scores import score_failed, score_publish


@shared_task(name="lti.publish_score", bind=True, max_retries=None, acks_late=True,
             soft_time_limit=60, time_limit=90)
def publish_score(self, delivery_id: int) -> bool:  # type: ignore[no-untyped-def]
    try:
        return score_publish(delivery_id=delivery_id)
    except PlatformError as exc:
        final = self.request.retries >= settings.LTI_SCORE_RETRIES
        score_failed(delivery_id=delivery_id, error=str(exc), final=final)
        if final:
            return False
        raise self.retry(exc=exc, countdown=min(2 ** self.request.retries * 5, 600)) from exc


@shared_task(name="lti.sync_roster", acks_late=True, soft_time_limit=120, time_limit=150)
def sync_roster(context_course_id: int) -> int:
    try:
        return roster_sync(context_course_id=context_course_id)
    except PlatformError:
        return -1  # recorded on the row for instructors; the next launch or click tries again
