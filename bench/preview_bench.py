"""Edit → preview shown, over the seed assignments, beside a cold run of the same reference.

    .venv/bin/python bench/preview_bench.py [-k 5]

"Edit" changes a parameter value (so no cached analysis can answer) and posts the edit form to
the preview URL over HTTP, as the page does (a private stack: gunicorn, a maintenance-lane
worker, the warm sandbox, Redis, SQLite). The web request only queues a job; the worker stages
the working copy, runs the reference, builds paths, the feedback space (formula parts run the
evaluation points) and the graph picture. "Shown" is when the page's own polling (after
the delay each fragment says) gets the finished preview; "ready" is the job's time in the
worker's hands (created → finished). The baseline, measured in the same run, is a cold run of
the same reference: a fresh `python -m chainrule.analysis.cli` (SubprocessRunner).
Goal: shown p50 <= 300 ms.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stack import Stack, setup_django

GOAL_MS = 300.0
PASSWORD = "bench-preview-pw"


def edited(data: dict[str, Any], step: int) -> dict[str, Any]:
    """The catalog with its first float parameter nudged: a new variant every time."""
    params = dict(data["params"])
    for name, value in params.items():
        if isinstance(value, float):
            params[name] = round(value + 0.001 * (step + 1), 6)
            break
        if isinstance(value, list) and value and isinstance(value[0], float):
            params[name] = [round(value[0] + 0.001 * (step + 1), 6), *value[1:]]
            break
    return {**data, "params": params}


def form_fields(data: dict[str, Any]) -> dict[str, str]:
    """The edit form's POST fields for this catalog data, as the browser sends them."""
    from authoring.forms import DATETIME_FORMAT, initial_from_catalog

    initial, parts = initial_from_catalog(data)
    post = {name: value.strftime(DATETIME_FORMAT) if isinstance(value, datetime) else
            "" if value is None else str(value) for name, value in initial.items()}
    post.update({"parts-TOTAL_FORMS": str(len(parts)), "parts-INITIAL_FORMS": str(len(parts)),
                 "parts-MIN_NUM_FORMS": "0", "parts-MAX_NUM_FORMS": "50"})
    for index, part in enumerate(parts):
        post.update({f"parts-{index}-{name}": str(value) for name, value in part.items()})
    return post


def logged_in(url: str, username: str) -> requests.Session:
    session = requests.Session()
    session.get(f"{url}/accounts/login/", timeout=30)
    response = session.post(f"{url}/accounts/login/", timeout=30, allow_redirects=False, data={
        "username": username, "password": PASSWORD, "csrfmiddlewaretoken": session.cookies["csrftoken"]})
    if response.status_code != 302:
        raise SystemExit(f"login failed: {response.status_code}")
    session.headers.update({"X-CSRFToken": session.cookies.get("csrftoken") or "", "HX-Request": "true"})
    return session


def preview_ms(session: requests.Session, url: str, slug: str, data: dict[str, Any]) -> tuple[float, float]:
    """(shown, ready) in ms: the page's polling sees it; the worker had it."""
    from assignments.models import AuthoringJob

    start = time.perf_counter()
    html = session.post(f"{url}/staff/assignments/{slug}/preview/", data=form_fields(data), timeout=60).text
    found = re.search(r'id="job-(\d+)"', html)
    if not found:
        raise SystemExit(f"{slug}: no job in the preview answer: {html[:500]}")
    while 'hx-get="' in html:
        delay = re.search(r"delay:(\d+)ms", html)  # as the page's htmx does: the delay the fragment says
        time.sleep(int(delay.group(1)) / 1000 if delay else 0.1)
        html = session.get(f"{url}/staff/jobs/{found.group(1)}/", timeout=60).text
    shown = (time.perf_counter() - start) * 1000
    if "reference-error" in html or 'data-job-status="done"' not in html:
        raise SystemExit(f"{slug}: preview failed: {html[:800]}")
    job = AuthoringJob.objects.get(pk=int(found.group(1)))
    assert job.finished_at is not None
    return shown, (job.finished_at - job.created_at).total_seconds() * 1000


def cold_ms(assignment: Any, data: dict[str, Any]) -> float:
    from assignments.part_config import reference_keys
    from grading.reference import SubprocessRunner

    keys = reference_keys([(p.key, p.kind_config) for p in assignment.parts.all()])
    start = time.perf_counter()
    SubprocessRunner().analyze(program=assignment.reference_program, params=data["params"], parts=keys)
    return (time.perf_counter() - start) * 1000


def run(url: str, k: int) -> tuple[list[float], list[float], list[float]]:
    from assignments.models import Assignment
    from authoring.publishing import working_catalog

    session = logged_in(url, "bench-instructor")
    shown: list[float] = []
    ready: list[float] = []
    colds: list[float] = []
    for assignment in Assignment.objects.order_by("slug"):
        data = working_catalog(assignment=assignment)
        preview_ms(session, url, assignment.slug, edited(data, -1))  # first use of this assignment's code paths
        times = [preview_ms(session, url, assignment.slug, edited(data, step)) for step in range(k)]
        cold = cold_ms(assignment, edited(data, k))
        shown += [t[0] for t in times]
        ready += [t[1] for t in times]
        colds.append(cold)
        print(f"  {assignment.slug:20s} shown p50 {statistics.median(t[0] for t in times):6.0f} ms   "
              f"ready p50 {statistics.median(t[1] for t in times):6.0f} ms   cold run {cold:6.0f} ms", flush=True)
    return shown, ready, colds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", type=int, default=5, help="edits per seed assignment")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="preview-bench-") as tmp:
        setup_django(Path(tmp))
        from django.core.management import call_command

        from assignments.services import course_demo
        from grader.accounts import user_create

        call_command("migrate", verbosity=0)
        stack = Stack(workdir=Path(tmp), redis=None, numeric_workers=1, code_workers=1)
        try:
            stack.start(lanes=("maintenance",))
            call_command("load_assignments", verbosity=0)
            user_create(username="bench-instructor", role="instructor", course=course_demo(), password=PASSWORD)
            shown, ready, colds = run(stack.url, args.k)
        finally:
            stack.close()
    p50, cold = statistics.median(shown), statistics.median(colds)
    p95 = sorted(shown)[int(0.95 * (len(shown) - 1))]
    print(f"edit → preview shown p50 {p50:6.0f} ms (p95 {p95:.0f} ms, n={len(shown)}; ready in the worker p50 "
          f"{statistics.median(ready):.0f} ms)   cold reference run p50 {cold:6.0f} ms (n={len(colds)})   "
          f"ratio {cold / p50:.1f}× faster   goal <= {GOAL_MS:.0f} ms: {'met' if p50 <= GOAL_MS else 'NOT met'}")


if __name__ == "__main__":
    main()
