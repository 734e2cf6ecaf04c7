"""Enqueueing (infra/enqueue.py) on the real Redis broker: what lands on a lane's queue is the Celery
message a worker runs, one drain waits however many submissions ask for one, and a broker that
cannot be reached loses nothing silently (the call says so and logs what happens instead)."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from config.celery_app import app
from infra.enqueue import enqueue, enqueue_once, flag_clear


@pytest.fixture()
def queue(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A private queue for every lane, emptied afterwards."""
    name = f"test-enqueue-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr("infra.enqueue.queue_name", lambda lane: name)
    yield name
    redis.Redis.from_url(app.conf.broker_url).delete(name)


def _messages(queue: str) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in redis.Redis.from_url(app.conf.broker_url).lrange(queue, 0, -1)]


def test_a_task_lands_on_its_lanes_queue_as_the_message_a_worker_runs(queue: str) -> None:
    assert enqueue("grader.grade_submission", 42, lane="code", if_lost="the sweeper sends it again")
    [sent] = _messages(queue)
    assert sent["headers"]["task"] == "grader.grade_submission"
    assert json.loads(base64.b64decode(sent["body"]))[0] == [42]
    assert sent["properties"]["delivery_info"]["routing_key"] == queue
    assert sent["headers"]["eta"] is None


def test_a_countdown_becomes_the_messages_eta(queue: str) -> None:
    assert enqueue("grader.grade_submission", 7, lane="code", countdown=5.0, if_lost="the sweeper sends it again")
    [sent] = _messages(queue)
    assert sent["headers"]["eta"] is not None  # the worker holds it until then


def test_while_a_drain_waits_more_submissions_send_no_second_one(queue: str) -> None:
    flag = f"test-flag-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(app.conf.broker_url)
    try:
        sent = [enqueue_once("grader.grade_numeric", lane="numeric", flag=flag, ttl_s=5, if_lost="-")
                for _ in range(3)]
        assert sent == [True, True, True] and len(_messages(queue)) == 1
        assert 0 < client.ttl(flag) <= 5  # a lost message holds back the next one for a few seconds only
        flag_clear(flag)  # the drain started: the next submission sends the next drain
        assert enqueue_once("grader.grade_numeric", lane="numeric", flag=flag, ttl_s=5, if_lost="-")
        assert [m["headers"]["task"] for m in _messages(queue)] == ["grader.grade_numeric"] * 2
    finally:
        client.delete(flag)


def test_with_the_broker_away_enqueue_says_what_happens_instead_and_never_raises(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(app.conf, "broker_url", "redis://127.0.0.1:9/0")  # nothing listens there
    monkeypatch.setattr(app, "_pool", None)  # connections are pooled: new ones go to the URL above
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    assert enqueue("grader.grade_submission", 7, lane="code", if_lost="the sweeper sends it again") is False
    assert "could not enqueue grader.grade_submission(7,); the sweeper sends it again" in caplog.text


def test_a_drain_that_could_not_be_sent_leaves_no_flag_behind(
        queue: str, monkeypatch: pytest.MonkeyPatch) -> None:
    flag = f"test-flag-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(app, "send_task", lambda *args, **kwargs: (_ for _ in ()).throw(OSError("broker away")))
    assert enqueue_once("grader.grade_numeric", lane="numeric", flag=flag, ttl_s=5, if_lost="-") is False
    assert not redis.Redis.from_url(app.conf.broker_url).exists(flag)  # the next submission tries again
