"""The one-LPUSH task publisher (infra/fast_publish.py) sends what Celery's apply_async sends.

A worker decodes both the same way only if every header and property it reads is there with the
same meaning; these compare the two messages key by key (ids aside) on a real Redis, and a real
worker grades a submission announced this way (test_pipeline covers the rest of that path).
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest
import redis

from config.celery_app import app
from grader.tasks import grade_numeric, grade_submission, warm_variant
from infra.enqueue import enqueue
from infra.fast_publish import flag_clear, message, task_publish, task_publish_once

IDS = ("id", "root_id", "correlation_id", "delivery_tag", "origin", "reply_to")


def _sent_by_celery(task: Any, args: list[Any], queue: str) -> dict[str, Any]:
    client = redis.Redis.from_url(app.conf.broker_url)
    client.delete(queue)
    task.apply_async(args=args, queue=queue)
    [raw] = client.lrange(queue, 0, -1)
    client.delete(queue)
    return dict(json.loads(raw))


def _without_ids(message: dict[str, Any]) -> dict[str, Any]:
    flat = {**message, "headers": dict(message["headers"]), "properties": dict(message["properties"])}
    for part in (flat["headers"], flat["properties"]):
        for key in IDS:
            part.pop(key, None)
    flat["body"] = json.loads(base64.b64decode(flat["body"]))
    return flat


@pytest.mark.parametrize(("task", "args"), [(grade_submission, [123456789]), (warm_variant, [3, 41])])
def test_the_lean_message_is_the_one_apply_async_sends(task: Any, args: list[Any]) -> None:
    queue = f"test-publish-{uuid.uuid4().hex[:8]}"
    celery = _sent_by_celery(task, args, queue)
    lean = message(app=app, task=task, args=args, queue=queue)
    assert _without_ids(lean) == _without_ids(celery)
    assert set(lean["headers"]) == set(celery["headers"]) and set(lean["properties"]) == set(celery["properties"])
    # A task's own id is its root and its correlation id, as Celery writes them.
    assert lean["headers"]["root_id"] == lean["headers"]["id"] == lean["properties"]["correlation_id"]


def test_the_lean_publish_lands_on_the_queue_a_worker_reads() -> None:
    queue = f"test-publish-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(app.conf.broker_url)
    task_publish(grade_submission, args=[42], queue=queue)
    [raw] = client.lrange(queue, 0, -1)
    client.delete(queue)
    sent = json.loads(raw)
    assert sent["headers"]["task"] == "grader.grade_submission"
    assert json.loads(base64.b64decode(sent["body"]))[0] == [42]
    assert sent["properties"]["delivery_info"]["routing_key"] == queue


def test_eager_mode_and_other_brokers_go_through_apply_async(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[Any, ...]] = []
    monkeypatch.setattr(grade_submission, "apply_async", lambda **kwargs: sent.append(tuple(kwargs.items())))
    eager, url, priority = app.conf.task_always_eager, app.conf.broker_url, app.conf.task_default_priority
    try:
        app.conf.task_always_eager = True
        task_publish(grade_submission, args=[7], queue="q")
        app.conf.task_always_eager, app.conf.broker_url = False, "amqp://guest@localhost//"
        task_publish(grade_submission, args=[8], queue="q")
        app.conf.broker_url, app.conf.task_default_priority = url, 5  # kombu would pick another list
        task_publish(grade_submission, args=[9], queue="q")
    finally:
        app.conf.task_always_eager, app.conf.broker_url, app.conf.task_default_priority = eager, url, priority
    assert sent == [(("args", [n]), ("queue", "q")) for n in (7, 8, 9)]


def test_while_a_drain_waits_more_submissions_send_no_second_one() -> None:
    queue, flag = f"test-publish-{uuid.uuid4().hex[:8]}", f"test-flag-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(app.conf.broker_url)
    try:
        sent = [task_publish_once(grade_numeric, args=[], queue=queue, flag=flag, ttl_s=5) for _ in range(3)]
        assert sent == [True, False, False] and client.llen(queue) == 1
        assert 0 < client.ttl(flag) <= 5  # a lost message holds back the next one for a few seconds only
        flag_clear(app, flag)  # the drain started: the next submission sends the next drain
        assert task_publish_once(grade_numeric, args=[], queue=queue, flag=flag, ttl_s=5)
        assert client.llen(queue) == 2
        assert json.loads(client.lrange(queue, 0, 0)[0])["headers"]["task"] == "grader.grade_numeric"
    finally:
        client.delete(queue, flag)


def test_drain_messages_from_the_template_are_apply_async_messages_with_fresh_ids() -> None:
    queue, flag = f"test-publish-{uuid.uuid4().hex[:8]}", f"test-flag-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(app.conf.broker_url)
    try:
        for _ in range(2):
            assert task_publish_once(grade_numeric, args=[], queue=queue, flag=flag, ttl_s=5)
            flag_clear(app, flag)
        sent = [json.loads(raw) for raw in client.lrange(queue, 0, -1)]
    finally:
        client.delete(queue, flag)
    celery = _sent_by_celery(grade_numeric, [], queue)
    assert all(_without_ids(one) == _without_ids(celery) for one in sent)
    ids = {one["headers"]["id"] for one in sent} | {one["properties"]["delivery_tag"] for one in sent}
    assert len(ids) == 4  # two messages, each with its own task id and delivery tag (kombu's unacked key)
    assert {one["properties"]["reply_to"] for one in sent} == {str(app.thread_oid)}


def test_enqueue_with_the_fast_path_off_sends_through_celery(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.GRADER_FAST_PUBLISH = False  # the seam of docs/decisions/0001-fast-publish.md
    queue = f"test-publish-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr("infra.enqueue.queue_name", lambda lane: queue)
    client = redis.Redis.from_url(app.conf.broker_url)
    try:
        assert enqueue("grader.grade_submission", 42, lane="code", if_lost="the sweeper sends it again")
        [raw] = client.lrange(queue, 0, -1)
    finally:
        client.delete(queue)
    sent = json.loads(raw)
    assert sent["headers"]["task"] == "grader.grade_submission"
    assert json.loads(base64.b64decode(sent["body"]))[0] == [42]
    assert sent["properties"]["delivery_info"]["routing_key"] == queue


@pytest.mark.parametrize("fast", [True, False])
def test_enqueue_with_the_broker_away_says_what_happens_instead_and_never_raises(
        fast: bool, settings: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    settings.GRADER_FAST_PUBLISH = fast
    monkeypatch.setattr(app.conf, "broker_url", "redis://127.0.0.1:9/0")  # nothing listens there
    monkeypatch.setattr(app.conf, "broker_connection_max_retries", 0)
    assert enqueue("grader.grade_submission", 7, lane="code", if_lost="the sweeper sends it again") is False
    assert "could not enqueue grader.grade_submission(7,); the sweeper sends it again" in caplog.text
