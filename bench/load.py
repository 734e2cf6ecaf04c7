"""Load drill: N students log in and submit within a window over HTTP,
70 % numeric / 30 % code, right and wrong answers; then the database is checked: every
submission graded exactly once, nothing lost, nothing doubled.

    .venv/bin/python bench/load.py                                 # 1000 students in 60 s, private stack
    .venv/bin/python bench/load.py --students 300 --seconds 0 --workers 1,2   # a burst: throughput per pool size
    DATABASE_URL=sqlite:///db.sqlite3 .venv/bin/python bench/load.py --url http://127.0.0.1:8000  # `make run`

Students log in with an API token by default (`Authorization: Token …`, a hashed look-up);
`--login password` goes through the login form instead, which costs one PBKDF2 check each
(about 0.3 s of CPU, more on a loaded machine: 1000 of them saturate two cores for minutes).
Latency is graded_at − created_at from the database, per lane; throughput is graded
submissions over the first submit → last graded span.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import re
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from numeric_bench import CODE_WORK, NUMERIC_WORK
from stack import PrivatePostgres, PrivateRedis, Stack, setup_django

PASSWORD = "load-drill-password"


@dataclass
class Student:
    username: str
    token: str


@dataclass
class Outcome:
    ids: list[int] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    retries: int = 0  # POSTs sent again (same Idempotency-Key) after a 5xx or a lost connection
    submit_s: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Browser:
    """One student's HTTP connection, with a session cookie after a password login."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=60)
        self.cookies: dict[str, str] = {}
        self.headers: dict[str, str] = {}

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        sent = {**self.headers, **(headers or {})}
        if self.cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        self.conn.request(method, path, body=body, headers=sent)
        response = self.conn.getresponse()
        for header in response.msg.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            self.cookies[name.strip()] = rest.split(";")[0]
        return response.status, response.read()

    def log_in(self, student: Student, how: str) -> None:
        if how == "token":
            self.headers["Authorization"] = f"Token {student.token}"
            return
        status, page = self.request("GET", "/accounts/login/")
        match = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        if status != 200 or not match:
            raise RuntimeError(f"login page: HTTP {status}")
        form = f"csrfmiddlewaretoken={match.group(1).decode()}&username={student.username}&password={PASSWORD}"
        status, _ = self.request("POST", "/accounts/login/", form.encode(),
                                 {"Content-Type": "application/x-www-form-urlencoded", "Referer": "/accounts/login/"})
        if status != 302:
            raise RuntimeError(f"login: HTTP {status}")
        self.headers["X-CSRFToken"] = self.cookies.get("csrftoken", "")

    def submit(self, slug: str, payload: dict[str, Any], *, key: str | None = None) -> int:
        """One POST; `key` is sent as the Idempotency-Key, so a retry cannot make a second submission."""
        headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
        status, body = self.request("POST", f"/api/v1/assignments/{slug}/submissions/", json.dumps(payload).encode(),
                                    headers)
        if status not in (200, 202):
            raise Refused(status)
        return int(json.loads(body)["id"])

    def submit_retrying(self, slug: str, payload: dict[str, Any], *, key: str, retries: int) -> tuple[int, int]:
        """What a careful client does: on a 503 (a dependency is down, `Retry-After`), a 5xx or a lost
        connection, the same POST again with the same key after a pause. Returns (id, retries used)."""
        for attempt in range(retries + 1):
            try:
                return self.submit(slug, payload, key=key), attempt
            except (Refused, OSError, http.client.HTTPException) as exc:
                if attempt == retries or (isinstance(exc, Refused) and exc.status < 500):
                    raise
                time.sleep(min(0.5 * 2 ** attempt, 5.0))
                self.conn.close()  # a fresh connection: the old one may be half-closed
        raise AssertionError("unreachable")


class Refused(RuntimeError):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


def students_create(count: int, *, with_password: bool) -> list[Student]:
    from django.contrib.auth.hashers import make_password

    from assignments.services import course_demo
    from grader.accounts import user_create

    course, prefix = course_demo(), f"load-{uuid.uuid4().hex[:6]}"
    students = []
    for n in range(count):
        user, token = user_create(username=f"{prefix}-{n}", role="student", course=course, with_token=True)
        students.append(Student(user.username, token or ""))
    if with_password:  # one hash for all: creating 1000 PBKDF2 hashes would take minutes
        from django.contrib.auth import get_user_model

        get_user_model().objects.filter(username__startswith=prefix).update(password=make_password(PASSWORD))
    return students


def load_window(url: str, students: list[Student], *, seconds: float, code_share: float, login: str,
                senders: int = 32, seed: int = 7, retries: int = 6) -> Outcome:
    """Each student logs in and submits once, at a random moment of the window."""
    rng = random.Random(seed)
    plan = sorted(((rng.uniform(0, seconds), s, rng.random() < code_share, rng.random()) for s in students),
                  key=lambda row: row[0])
    outcome, start = Outcome(), time.perf_counter() + 0.2

    def sender(offset: int) -> None:
        for when, student, code, pick in plan[offset::senders]:
            time.sleep(max(0.0, start + when - time.perf_counter()))
            work = CODE_WORK if code else NUMERIC_WORK
            slug, payload = work[int(pick * len(work))]
            try:
                browser = Browser(url)
                browser.log_in(student, login)
                began = time.perf_counter()
                submission_id, retried = browser.submit_retrying(slug, payload, key=f"load-{student.username}",
                                                                 retries=retries)
            except Exception as exc:  # counted, and the drill goes on
                with outcome.lock:
                    outcome.errors[f"{type(exc).__name__}: {exc}"[:80]] += 1
                continue
            with outcome.lock:
                outcome.ids.append(submission_id)
                outcome.submit_s.append(time.perf_counter() - began)
                outcome.retries += retried

    with ThreadPoolExecutor(max_workers=senders) as pool:
        for future in [pool.submit(sender, offset) for offset in range(senders)]:
            future.result()
    return outcome


@dataclass
class Verdict:
    accepted: int
    graded: int
    errored: int
    lost: int
    doubled: int
    redelivered: int
    latency: dict[str, tuple[float, float, float, int]]
    throughput: float


def verify(ids: list[int], students: list[Student], *, timeout: float = 300) -> Verdict:
    """Waits until nothing is queued or running (or `timeout`), then counts from the database."""
    from django.contrib.auth import get_user_model
    from django.db.models import Count

    from grader.models import Result, Submission

    deadline = time.monotonic() + timeout
    while Submission.objects.filter(id__in=ids, status__in=["queued", "running"]).exists() and \
            time.monotonic() < deadline:
        time.sleep(0.5)
    rows = Submission.objects.filter(id__in=ids)
    graded = rows.filter(status="graded")
    results = Counter(dict(Result.objects.filter(submission_id__in=ids).values_list("submission_id")
                           .annotate(n=Count("id")).values_list("submission_id", "n")))
    users = get_user_model().objects.filter(username__in=[s.username for s in students])
    per_student = Submission.objects.filter(student__in=users).values("student").annotate(n=Count("id"))
    doubled = sum(1 for row in per_student if row["n"] > 1) + sum(1 for n in results.values() if n > 1)
    latency = {}
    for lane in ("numeric", "code"):
        spans = [(done - made).total_seconds()
                 for made, done in graded.filter(lane=lane).values_list("created_at", "graded_at")]
        latency[lane] = (*_percentiles(spans), len(spans))
    times = list(graded.values_list("created_at", "graded_at"))
    span = (max(d for _, d in times) - min(c for c, _ in times)).total_seconds() if times else 0.0
    count, errored = graded.count(), rows.filter(status="error").count()
    return Verdict(accepted=len(ids), graded=count, errored=errored,
                   lost=len(ids) - count - errored,  # accepted but never finished (or gone from the database)
                   doubled=doubled, redelivered=rows.filter(deliveries__gt=1).count(),
                   latency=latency, throughput=count / span if span else float("nan"))


def _percentiles(values: list[float]) -> tuple[float, float, float]:
    if not values:
        return (float("nan"),) * 3
    if len(values) == 1:
        return (values[0],) * 3
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return statistics.median(values), cuts[94], cuts[98]


def report(label: str, outcome: Outcome, verdict: Verdict, students: int) -> None:
    print(f"\n{label}: {students} students, {verdict.accepted} accepted, {sum(outcome.errors.values())} errors, "
          f"{verdict.graded} graded, {verdict.errored} infrastructure errors, {verdict.lost} lost, "
          f"{verdict.doubled} doubled ({verdict.redelivered} redelivered, graded once; {outcome.retries} POSTs "
          "retried with their Idempotency-Key)")
    for kind, count in outcome.errors.most_common(5):
        print(f"  error ×{count}: {kind}")
    s50, s95, s99 = _percentiles(outcome.submit_s)
    print(f"  submit request:      p50 {s50 * 1000:7.1f} ms  p95 {s95 * 1000:7.1f} ms  p99 {s99 * 1000:7.1f} ms")
    for lane, (p50, p95, p99, n) in verdict.latency.items():
        print(f"  {lane:7} submit → graded p50 {p50 * 1000:7.1f} ms  p95 {p95 * 1000:7.1f} ms  "
              f"p99 {p99 * 1000:7.1f} ms  ({n})")
    print(f"  throughput: {verdict.throughput:.1f} graded/s (first submit → last graded)")


def private_run(args: argparse.Namespace, during: Callable[[Stack, float], None] | None = None) -> list[Verdict]:
    """Load runs against a private stack (one per --workers value); `during` runs beside the load."""
    from django.core.management import call_command

    verdicts: list[Verdict] = []
    with tempfile.TemporaryDirectory(prefix="load-drill-") as tmp:
        workdir = Path(tmp)
        postgres = PrivatePostgres() if getattr(args, "private_postgres", False) else None
        if postgres:
            postgres.create()
        setup_django(workdir, database_url=postgres.url if postgres else None)
        redis = PrivateRedis() if args.private_redis else None
        if redis:
            redis.start()
        call_command("migrate", verbosity=0)
        try:
            for workers in [int(w) for w in str(args.workers).split(",")]:
                stack = Stack(workdir=workdir, redis=redis, postgres=postgres, numeric_workers=workers)
                _point_producer(stack, stack.redis_url)
                try:
                    stack.start()
                    if not verdicts:
                        call_command("load_assignments", verbosity=0)
                    students = students_create(args.students, with_password=args.login == "password")
                    chaos = threading.Thread(target=during, args=(stack, args.seconds)) if during else None
                    if chaos:
                        chaos.start()
                    outcome = load_window(stack.url, students, seconds=args.seconds, code_share=args.code_share,
                                          login=args.login)
                    if chaos:
                        chaos.join()
                    if postgres:
                        from django.db import connections

                        connections.close_all()  # the drill's own connection may date from before a stop
                    verdict = verify(outcome.ids, students)
                    report(f"numeric pool -c {workers}", outcome, verdict, args.students)
                    verdicts.append(verdict)
                finally:
                    stack.close()
        finally:
            if redis:
                redis.kill()
            if postgres:
                from django.db import connections

                connections.close_all()
                postgres.remove()
    return verdicts


def _point_producer(stack: Stack, redis_url: str) -> None:
    """This process enqueues nothing, but its settings name the stack's queues for the metrics."""
    from config.celery_app import app

    app.conf.task_default_queue = stack.queue
    app.conf.broker_url = redis_url


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--students", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=60, help="window the submissions are spread over (0: burst)")
    p.add_argument("--code-share", type=float, default=0.3)
    p.add_argument("--workers", default="2", help="numeric pool sizes, e.g. 1,2,4: one run each")
    p.add_argument("--login", choices=["token", "password"], default="token")
    p.add_argument("--url", help="a running server (DATABASE_URL must name its database)")
    p.add_argument("--private-redis", action="store_true", help="a private redis-server instead of 127.0.0.1:6379")
    return p


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if not args.url:
        private_run(args)
        return
    import os

    if "DATABASE_URL" not in os.environ:
        sys.exit("--url needs DATABASE_URL: the drill creates its students and checks grading in that database")
    os.environ.setdefault("SECRET_KEY", "load-drill-client")
    setup_django(Path("."), database_url=os.environ["DATABASE_URL"], private=False)
    students = students_create(args.students, with_password=args.login == "password")
    outcome = load_window(args.url, students, seconds=args.seconds, code_share=args.code_share, login=args.login)
    report(args.url, outcome, verify(outcome.ids, students), args.students)


if __name__ == "__main__":
    main()
