"""Each kind of work enters its own lane's queue (infra/lanes.py), checked on the real Redis broker:
calls to an LMS never wait in the numeric queue, where a slow platform would delay students' grades."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from config.celery_app import app
from infra.lanes import LANES, queue_name


@pytest.fixture()
def base() -> Iterator[str]:
    """A queue name of this test's own (Celery's settings object is set and restored by hand)."""
    before, name = app.conf.task_default_queue, f"test-lanes-{uuid.uuid4().hex[:8]}"
    app.conf.task_default_queue = name
    try:
        yield name
    finally:
        redis.Redis.from_url(app.conf.broker_url).delete(*[queue_name(lane=lane) for lane in LANES])
        app.conf.task_default_queue = before


def _lengths(base: str) -> dict[str, int]:
    client = redis.Redis.from_url(app.conf.broker_url)
    return {lane: int(client.llen(queue_name(lane=lane))) for lane in LANES}


def test_lms_scores_and_roster_syncs_go_to_the_lms_lane_never_the_numeric_one(base: str) -> None:
    from lti.nrps_sync import roster_sync_enqueue
    from lti.scores import score_enqueue

    score_enqueue(41)
    roster_sync_enqueue(42)
    assert _lengths(base) == {"numeric": 0, "code": 0, "maintenance": 0, "lms": 2}


def test_every_lane_has_a_queue_of_its_own(base: str) -> None:
    queues = [queue_name(lane=lane) for lane in LANES]
    assert len(set(queues)) == len(LANES) and queue_name(lane="numeric") == base


def test_no_task_may_run_longer_than_the_broker_waits_before_delivering_it_again() -> None:
    from django.conf import settings

    app.loader.import_default_modules()  # every app's tasks module
    timeout = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    ours = {name: task for name, task in app.tasks.items() if not name.startswith("celery.")}
    assert {"lti.publish_score", "courseops.regrade_apply", "assignments.run_authoring_job"} <= set(ours)
    too_long = {name: task.time_limit for name, task in ours.items() if (task.time_limit or 0) >= timeout}
    assert too_long == {}  # each would be delivered again, and run twice at once
