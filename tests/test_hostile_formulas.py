"""A formula that spins SymPy, submitted over HTTP to the real web server and worker."""

from __future__ import annotations

import json
from typing import Any

import pytest

from grader.models import Submission
from tests.test_code_and_symbolic import HOSTILE_FORMULA


@pytest.mark.integration
def test_hostile_formulas_over_http_are_graded_and_the_web_server_stays_responsive(
    live_db: None, worker: Any, web_server: str, make_user: Any
) -> None:
    import threading
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    student = make_user("student")

    def submit_over_http(_: int) -> tuple[int, int]:
        request = urllib.request.Request(
            f"{web_server}/api/v1/assignments/visual-walkthrough/submissions/",
            data=json.dumps({"answers": {"dz_dx": HOSTILE_FORMULA}}).encode(), method="POST",
            headers={"Authorization": f"Token {student.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=20) as response:  # main never answered
            return response.status, int(json.loads(response.read())["id"])

    answered = threading.Event()

    def health() -> None:
        with urllib.request.urlopen(f"{web_server}/healthz", timeout=20):
            answered.set()

    with ThreadPoolExecutor(max_workers=5) as pool:
        results = list(pool.map(submit_over_http, range(4)))
        pool.submit(health).result()
    assert answered.is_set() and all(status == 202 for status, _ in results), results
    from tests.test_api import _eventually

    ids = [submission_id for _, submission_id in results]
    assert _eventually(lambda: Submission.objects.filter(id__in=ids, status="graded").count() == 4)
    for submission in Submission.objects.filter(id__in=ids):
        part = next(p for p in submission.result.document["parts"] if p["part"] == "dz_dx")
        assert not part["correct"]  # its numbers are not the derivative's
