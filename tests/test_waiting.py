"""Waiting for grading instead of polling: the API's `wait` (POST body, GET query) and the page's
status request return as soon as the worker has finished, woken through Redis (grader/finished.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import requests
from django.test import override_settings

from grader import finished
from grader.models import Submission
from tests.clients import api

SUBMIT = "/api/v1/assignments/visual-walkthrough/submissions/"
WRONG = {"x.grad": "4", "y.grad": "2"}  # the x·x path forgotten


def _token_headers(person: Any) -> dict[str, str]:
    return {"Authorization": f"Token {person.token}"}


@pytest.mark.integration
def test_a_submission_posted_with_wait_comes_back_graded_in_the_same_response(
    live_db: None, worker: Any, web_server: str, student: Any
) -> None:
    response = requests.post(f"{web_server}{SUBMIT}", json={"answers": WRONG, "wait": 20},
                             headers=_token_headers(student), timeout=30)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "graded" and response.headers["Location"].endswith(f"/submissions/{body['id']}/")
    part = {p["part"]: p for p in body["result"]["parts"]}["x.grad"]
    assert part["correct"] is False and part["diagnosis"]["kind"] == "missing_path"
    assert "expected" not in part  # the same reveal rules as a GET


@pytest.mark.integration
def test_a_waiting_get_answers_when_grading_finishes(live_db: None, worker: Any, web_server: str,
                                                      student: Any) -> None:
    created = requests.post(f"{web_server}{SUBMIT}", json={"answers": WRONG}, headers=_token_headers(student),
                            timeout=30)
    assert created.status_code == 202 and created.json()["status"] == "queued"
    waited = requests.get(f"{web_server}/api/v1/submissions/{created.json()['id']}/?wait=20",
                          headers=_token_headers(student), timeout=40)
    assert waited.status_code == 200 and waited.json()["status"] == "graded"
    assert waited.json()["result"]["score"] == 1.0


@pytest.mark.django_db
@pytest.mark.parametrize("wait", ["soon", "-1", "21", "nan", "inf", ""])
def test_a_wait_that_is_no_number_of_seconds_is_400(student: Any, wait: str) -> None:
    client = api(student)
    created = client.post(SUBMIT, {"answers": WRONG}, format="json")
    response = client.get(f"/api/v1/submissions/{created.json()['id']}/?wait={wait}")
    assert response.status_code == 400 and "seconds" in response.json()["errors"]["wait"]


@pytest.mark.django_db
@pytest.mark.parametrize("wait", ["soon", -1, 21])
def test_a_post_with_a_bad_wait_is_400_and_stores_nothing(student: Any, wait: Any) -> None:
    response = api(student).post(SUBMIT, {"answers": WRONG, "wait": wait}, format="json")
    assert response.status_code == 400 and "wait" in response.json()["errors"]
    assert not Submission.objects.filter(student=student.user).exists()


@pytest.mark.django_db
def test_waiting_on_someone_elses_submission_is_404_at_once(student: Any, other_student: Any) -> None:
    theirs = api(other_student).post(SUBMIT, {"answers": WRONG}, format="json").json()["id"]
    started = time.monotonic()
    response = api(student).get(f"/api/v1/submissions/{theirs}/?wait=20")
    assert response.status_code == 404
    assert time.monotonic() - started < 5  # refused before any waiting, not after 20 s


@pytest.mark.django_db
def test_a_pending_submission_is_answered_as_pending_after_the_wait(student: Any) -> None:
    # No worker here: nothing grades it, so the request gives up after the second it asked for.
    client = api(student)
    created = client.post(SUBMIT, {"answers": WRONG}, format="json").json()["id"]
    started = time.monotonic()
    response = client.get(f"/api/v1/submissions/{created}/?wait=1")
    assert response.status_code == 200 and response.json()["status"] == "queued"
    assert time.monotonic() - started >= 1


def test_a_waiter_is_woken_by_the_announcement_not_by_its_recheck(monkeypatch: Any) -> None:
    monkeypatch.setattr(finished, "RECHECK_S", 30.0)  # so only the message can end the wait early
    state = {"done": False}
    checks = []

    def is_finished() -> bool:
        checks.append(time.monotonic())
        return state["done"]

    def worker() -> None:
        time.sleep(0.3)
        state["done"] = True
        finished.finished_announce(submission_ids=[987654321])

    finished._ensure_listener()
    assert finished._listening.wait(5), "the listener did not subscribe to Redis"
    threading.Thread(target=worker).start()
    started = time.monotonic()
    assert finished.finished_wait(submission_id=987654321, seconds=10, is_finished=is_finished) is True
    assert time.monotonic() - started < 10  # woken by the message, long before the 30 s re-read
    assert len(checks) == 2  # once before waiting, once when woken


def test_without_a_free_waiting_slot_the_answer_comes_at_once() -> None:
    with override_settings(GRADER_WAIT_SLOTS=1):
        finished._slots = None  # sized from the setting on first use
        try:
            holder_in, holder_out = threading.Event(), threading.Event()

            def hold_the_slot() -> None:
                finished.finished_wait(submission_id=1, seconds=10,
                                       is_finished=lambda: holder_in.set() or holder_out.is_set())

            holder = threading.Thread(target=hold_the_slot)
            holder.start()
            assert holder_in.wait(5)
            started = time.monotonic()
            assert finished.finished_wait(submission_id=2, seconds=10, is_finished=lambda: False) is False
            assert time.monotonic() - started < 3  # the second waiter was not made to wait its 10 s
            holder_out.set()
            finished.finished_announce(submission_ids=[1])
            holder.join(5)
            assert not holder.is_alive()
        finally:
            finished._slots = None


def test_one_user_cannot_hold_every_waiting_slot() -> None:
    release = threading.Event()
    entered = threading.Semaphore(0)

    def hold(holder: int, submission_id: int) -> None:
        finished.finished_wait(submission_id=submission_id, seconds=10, holder=holder,
                               is_finished=lambda: entered.release() or release.is_set())

    with override_settings(GRADER_WAIT_SLOTS=6):
        finished._slots = None
        holders = [threading.Thread(target=hold, args=(7, n)) for n in (11, 12)]
        try:
            for thread in holders:
                thread.start()
            assert entered.acquire(timeout=5) and entered.acquire(timeout=5)
            started = time.monotonic()
            assert finished.finished_wait(submission_id=13, seconds=10, holder=7, is_finished=lambda: False) is False
            assert time.monotonic() - started < 3  # user 7's third wait is answered at once, not in 10 s
            other = threading.Thread(target=hold, args=(8, 14))
            other.start()
            assert entered.acquire(timeout=5)
            time.sleep(0.3)
            assert other.is_alive()  # another user still gets a slot and waits
            holders.append(other)
        finally:
            release.set()
            finished.finished_announce(submission_ids=[11, 12, 14])
            for thread in holders:
                thread.join(5)
            finished._slots = None
        assert not any(thread.is_alive() for thread in holders)


def test_without_the_listener_a_waiter_still_sees_the_result_by_its_own_re_read(monkeypatch: Any) -> None:
    # Redis gone (or the message lost): nobody wakes the waiter, its own re-read does.
    monkeypatch.setattr(finished, "_ensure_listener", lambda: None)
    monkeypatch.setattr(finished, "RECHECK_S", 0.2)
    checks = []
    done_at = time.monotonic() + 0.5

    def is_finished() -> bool:
        checks.append(time.monotonic())
        return time.monotonic() >= done_at

    assert finished.finished_wait(submission_id=424242, seconds=15, holder="t", is_finished=is_finished) is True
    assert 3 <= len(checks) < 60  # re-read every 0.2 s until it was done, not a busy loop
