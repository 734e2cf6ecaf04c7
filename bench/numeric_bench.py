"""Submissions through the HTTP API: submit → graded latency and graded/s (SPEC §8).
Numeric answers by default; `--kind code` sends code parts, which run in the sandbox.

By default it starts its own stack on a fresh SQLite database, as the test fixtures do
(migrate, load the catalog, a Celery worker on a private queue, the web server), and
compares with a baseline: the same answers graded synchronously in-process with
grading.answer_grading. With --url and --token it measures a running server instead (poll
timing only, no database figures).

    .venv/bin/python bench/numeric_bench.py --quick        # < 1 minute
    .venv/bin/python bench/numeric_bench.py -n 1000 --clients 8
    .venv/bin/python bench/numeric_bench.py --quick --kind code   # code parts end to end
    .venv/bin/python bench/numeric_bench.py --students 1000 --seconds 60   # SPEC §8 burst, 70/30 mix
    .venv/bin/python bench/numeric_bench.py --postgres      # on a private PostgreSQL cluster, as in production
"""

from __future__ import annotations

import argparse
import functools
import http.client
import importlib.util
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from stack import free_port, port_open, stop, wait_until  # noqa: E402 - the bench folder's own helpers

LOGS = ROOT / "test-output"
# Right and wrong answers, so the worker diagnoses as well as compares.
NUMERIC_WORK: list[tuple[str, dict[str, Any]]] = [
    ("visual-walkthrough", {"answers": {"x.grad": "7", "y.grad": "2"}}),
    ("visual-walkthrough", {"answers": {"x.grad": "4", "y.grad": "2"}}),
    ("positive-gradient", {"answers": {"x.grad": "7"}}),
    ("negative-gradient", {"answers": {"x.grad": "16"}}),
    ("non-scalar", {"answers": {"x.grad": "[2, 4, 6]"}}),
    ("detach", {"answers": {"x.grad": "12"}}),
    ("linear-layer", {"answers": {"w.grad": "[1, 2]", "b.grad": "1"}}),
    ("untracked-leaf", {"answers": {"w.grad": "2", "x.grad": "0"}}),
]
CODE_WORK: list[tuple[str, dict[str, Any]]] = [
    ("visual-walkthrough", {"code": {"grad_z": "def grad_z(x, y):\n    return y + 2*x, x\n"}}),
    ("visual-walkthrough", {"code": {"grad_z": "def grad_z(x, y):\n    return 2*x, x\n"}}),
    ("negative-gradient", {"code": {"grad_z": "def grad_z(x):\n    return 4 - 3*x**2\n"}}),
    ("detach", {"code": {"frozen": "x = torch.tensor([x0], requires_grad=True)\nz = (x**2).detach() * x\n"
                                  "z.backward()\n"}}),
    ("linear-layer", {"code": {"backward": "def linear_backward(x, w, b):\n    return x, torch.ones(1)\n"}}),
]
WORK = list(NUMERIC_WORK)  # --kind code swaps in CODE_WORK


@dataclass
class Sample:
    submission_id: int
    seen_s: float  # submit sent → graded submission received (the POST waits for it)


class Api:
    """One keep-alive HTTP connection per client thread."""

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        payload = json.dumps(body) if body is not None else None
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=payload, headers=self.headers)
                response = self.conn.getresponse()
                raw = response.read()
                if response.status >= 500 or "json" not in (response.getheader("Content-Type") or ""):
                    raise RuntimeError(f"{method} {path}: HTTP {response.status} {raw[:200]!r} "
                                       f"(a private stack logs to {LOGS}/bench-web.log)")
                return response.status, json.loads(raw or b"null")
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def submit(self, slug: str, payload: dict[str, Any], *, wait_s: float = 0) -> tuple[int, bool]:
        """The new submission's id, and whether it came back graded (asked to wait up to `wait_s`)."""
        body_in = {**payload, "wait": wait_s} if wait_s else payload
        status, body = self.call("POST", f"/api/v1/assignments/{slug}/submissions/", body_in)
        if status not in (200, 202):
            raise RuntimeError(f"submit {slug}: HTTP {status} {body}")
        return int(body["id"]), status == 200

    def wait(self, submission_id: int, *, timeout_s: float = 60) -> None:
        """Until graded: the server answers as soon as the worker finishes (`?wait=`), no polling."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            asked = time.monotonic()
            _, body = self.call("GET", f"/api/v1/submissions/{submission_id}/?wait=10")
            if body["status"] in ("graded", "error"):
                return
            if time.monotonic() - asked < 1:  # no waiting slot was free: poll gently instead
                time.sleep(0.2)
        raise TimeoutError(f"submission {submission_id} not graded in {timeout_s}s")


def closed_loop(url: str, tokens: list[str], count: int) -> list[Sample]:
    """Each client submits, polls until graded, then submits the next: latency under steady load."""
    samples: list[Sample] = []
    lock = threading.Lock()

    def client(index: int, token: str) -> None:
        api = Api(url, token)
        for n in range(index, count, len(tokens)):
            slug, payload = WORK[n % len(WORK)]
            started = time.perf_counter()
            submission_id, graded = api.submit(slug, payload, wait_s=10)
            if not graded:
                api.wait(submission_id)
            with lock:
                samples.append(Sample(submission_id, time.perf_counter() - started))

    _run_threads([functools.partial(client, i, t) for i, t in enumerate(tokens)])
    return samples


def burst(url: str, tokens: list[str], count: int) -> tuple[list[int], float]:
    """All clients submit as fast as they can, then wait for all: throughput. Returns ids and wall seconds."""
    ids: list[int] = []
    lock = threading.Lock()

    def client(index: int, token: str) -> None:
        api = Api(url, token)
        mine = [api.submit(*WORK[n % len(WORK)])[0] for n in range(index, count, len(tokens))]
        for submission_id in mine:
            api.wait(submission_id, timeout_s=300)
        with lock:
            ids.extend(mine)

    started = time.perf_counter()
    _run_threads([functools.partial(client, i, t) for i, t in enumerate(tokens)])
    return ids, time.perf_counter() - started


def open_loop(url: str, tokens: list[str], seconds: float) -> tuple[list[int], int]:
    """SPEC §8 burst: one submission per student at a random moment within `seconds`, 70 % numeric and
    30 % code, sent by 16 connections regardless of how fast grading goes. Returns ids and refused count."""
    import random

    rng = random.Random(7)
    plan = sorted((rng.uniform(0, seconds), token, rng.random() < 0.3) for token in tokens)
    ids: list[int] = []
    refused = [0]
    lock = threading.Lock()
    start = time.perf_counter() + 0.5

    def sender(offset: int) -> None:
        for when, token, code in plan[offset::16]:
            time.sleep(max(0.0, start + when - time.perf_counter()))
            slug, payload = rng.choice(CODE_WORK if code else NUMERIC_WORK)
            try:
                submission_id = Api(url, token).submit(slug, payload)[0]
            except RuntimeError:
                with lock:
                    refused[0] += 1
                continue
            with lock:
                ids.append(submission_id)

    _run_threads([functools.partial(sender, offset) for offset in range(16)])
    return ids, refused[0]


def report_open_loop(ids: list[int], refused: int, students: int, timeout_s: float = 180) -> None:
    from grader.models import Submission

    deadline = time.monotonic() + timeout_s
    while Submission.objects.filter(id__in=ids, status__in=["queued", "running"]).exists():
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    graded = Submission.objects.filter(id__in=ids, status="graded")
    latencies = [(done - created).total_seconds() for created, done in graded.values_list("created_at", "graded_at")]
    p50, p95 = percentiles(latencies)
    lost = students - len(latencies)
    print(f"\nburst of {students} students: {len(ids)} accepted, {refused} refused, {len(latencies)} graded, "
          f"{lost} not graded; submit → graded p50 {_ms(p50)}  p95 {_ms(p95)}  (target: 0 lost, p95 ≤ 2 s)")


def _run_threads(targets: list[Callable[[], None]]) -> None:
    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        for future in [pool.submit(target) for target in targets]:
            future.result()  # re-raises a client's error


def percentiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return (values[0], values[0]) if values else (float("nan"), float("nan"))
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return statistics.median(values), cuts[94]


def db_latencies(ids: list[int]) -> tuple[list[float], float, tuple[float, float]]:
    """From the database: graded_at − created_at per submission, graded/s over the run, and the p50 split
    into waiting (created → claimed by a worker) and grading (claimed → graded)."""
    from grader.models import Submission

    rows = list(Submission.objects.filter(id__in=ids, status="graded", graded_at__isnull=False)
                .values_list("created_at", "started_at", "graded_at"))
    if len(rows) != len(ids):
        print(f"  warning: {len(ids) - len(rows)} of {len(ids)} not graded", file=sys.stderr)
    if not rows:
        return [], float("nan"), (float("nan"), float("nan"))
    latencies = [(done - created).total_seconds() for created, _, done in rows]
    span = (max(done for *_, done in rows) - min(created for created, *_ in rows)).total_seconds()
    waiting = statistics.median((started - created).total_seconds() for created, started, _ in rows)
    grading = statistics.median((done - started).total_seconds() for _, started, done in rows)
    return latencies, len(rows) / span if span else float("nan"), (waiting, grading)


def noop_floor(count: int, clients: int) -> tuple[list[float], float]:
    """A no-op Celery task's round trip through the same broker and database: a row created, a task
    sent, the worker writes graded_at. Latency per row (graded_at − created_at) and rows/s in a burst."""
    from assignments.models import Assignment
    from grader.bench_floor import BENCH_NOOP
    from grader.models import Submission
    from grader.tasks import bench_noop
    from grading.variants import variant_get

    assignment = Assignment.objects.get(slug="positive-gradient")
    student = Submission.objects.order_by("id").values_list("student_id", flat=True).first()
    variant = variant_get(assignment=assignment, params=assignment.params)

    def one() -> int:
        row = Submission.objects.create(student_id=student, assignment=assignment, variant=variant, answers={},
                                        status=Submission.Status.ERROR, error_reason=BENCH_NOOP)
        bench_noop.apply_async(args=[row.id])
        return row.id

    serial = []
    for _ in range(min(count, 200)):
        submission_id = one()
        while not Submission.objects.filter(id=submission_id, graded_at__isnull=False).exists():
            time.sleep(0.002)
        serial.append(submission_id)
    ids = [one() for _ in range(count)]
    deadline = time.monotonic() + 120
    while Submission.objects.filter(id__in=ids, graded_at__isnull=True).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    rows = list(Submission.objects.filter(id__in=serial).values_list("created_at", "graded_at"))
    burst_rows = list(Submission.objects.filter(id__in=ids, graded_at__isnull=False)
                      .values_list("created_at", "graded_at"))
    span = (max(d for _, d in burst_rows) - min(c for c, _ in burst_rows)).total_seconds()
    Submission.objects.filter(id__in=[*serial, *ids]).delete()
    return [(d - c).total_seconds() for c, d in rows], len(burst_rows) / span if span else float("nan")


def in_process_baseline(count: int) -> tuple[list[float], float]:
    """The same answers graded synchronously with the worker's engine: no HTTP, no broker, no polling."""
    from assignments.models import Assignment
    from grading.answer_grading import answers_grade
    from grading.variants import variant_get

    prepared = []
    for slug, payload in WORK:
        assignment = Assignment.objects.prefetch_related("parts").get(slug=slug)
        prepared.append((assignment, variant_get(assignment=assignment, params=assignment.params), payload))
    times = []
    started = time.perf_counter()
    for n in range(count):
        assignment, variant, payload = prepared[n % len(prepared)]
        one = time.perf_counter()
        answers_grade(assignment=assignment, variant=variant, answers=payload.get("answers", {}),
                      code=payload.get("code", {}), expected_shown=True)
        times.append(time.perf_counter() - one)
    return times, count / (time.perf_counter() - started)


# --- a private stack, started like the test fixtures start theirs ------------------------------------------

def _spawn(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _web_command(server: str, port: int) -> list[str]:
    if server == "gunicorn":
        return [sys.executable, "-m", "gunicorn", "config.wsgi", "-c", "config/gunicorn.py", "-b", f"127.0.0.1:{port}",
                "--log-level", "warning"]
    return [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]


def _setup_django(workdir: Path, database_url: str | None = None) -> None:
    os.environ["DATABASE_URL"] = database_url or f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ["SANDBOX_SOCKET"] = str(workdir / "sandbox.sock")
    os.environ["GRADER_RATE_LIMIT"] = "0"  # one simulated student submits hundreds a minute
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-" + uuid.uuid4().hex)  # no built-in key any more
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


@contextmanager
def private_stack(clients: int, concurrency: int, server: str) -> Iterator[tuple[str, list[str]]]:
    """Fresh database with the catalog and one student per client, a worker and the web server."""
    from django.core.management import call_command

    from assignments.services import course_demo
    from grader.accounts import user_create

    LOGS.mkdir(exist_ok=True)
    call_command("migrate", verbosity=0)
    with reference_sandbox():  # references (once per variant) and code parts run there
        call_command("load_assignments", verbosity=0, stdout=io.StringIO())
        tokens = [user_create(username=f"bench-{uuid.uuid4().hex[:8]}", role="student", course=course_demo(),
                              with_token=True)[1] or "" for _ in range(clients)]
        with _services(concurrency, server) as url:
            yield url, tokens


@contextmanager
def _services(concurrency: int, server: str) -> Iterator[str]:
    """A worker on a private queue and the web server, both stopped on exit."""
    queue, port = f"bench-{uuid.uuid4().hex[:8]}", free_port()
    from config.celery_app import app

    app.conf.task_default_queue = queue  # this process sends the floor's no-op tasks there too
    env = {**os.environ, "CELERY_QUEUE": queue, "DEBUG": "0", "SECURE_COOKIES": "0", "LOG_LEVEL": "WARNING"}
    lanes = f"{queue},{queue}-code,{queue}-maintenance,{queue}-lms"  # every lane of infra/lanes.py
    worker = _spawn([sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", lanes, "-c", str(concurrency),
                     "--pool", "prefork", "--without-gossip", "--without-mingle", "--loglevel", "WARNING"],
                    env, LOGS / "bench-worker.log")
    web = _spawn(_web_command(server, port), env, LOGS / "bench-web.log")
    STACK_GROUPS.update(web=web.pid, worker=worker.pid)  # each its own process group (start_new_session)
    try:
        wait_until(lambda: port_open(port), "web server", proc=web)
        wait_until(lambda: _worker_ready(queue), "worker", proc=worker)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(web)
        stop(worker)


@contextmanager
def reference_sandbox() -> Iterator[None]:
    """The sandbox server, when the reference runner needs one (as the test fixtures start it)."""
    from django.conf import settings

    if not settings.GRADER_REFERENCE_RUNNER.endswith(".SandboxRunner"):
        yield
        return
    from grading.reference import SANDBOX_PRELOAD
    from sandbox.client import SandboxUnavailable
    from sandbox.launch import spawn_server, stop_server

    for uid_base in range(62000, 64000, 100):  # the first range no other server (a test session) holds
        with open(LOGS / "bench-sandbox.log", "ab") as log:
            try:
                server = spawn_server(settings.SANDBOX_SOCKET, preload=SANDBOX_PRELOAD,
                                      package_dirs=(str(ROOT / "chainrule"),), uid_base=uid_base, stderr=log.fileno(),
                                      allow_insecure_dev_backend=settings.SANDBOX_ALLOW_INSECURE_DEV_BACKEND)
                break
            except SandboxUnavailable:
                continue
    else:
        raise RuntimeError("no free sandbox uid range; see the bench sandbox log")
    try:
        yield
    finally:
        stop_server(server)


def _worker_ready(queue: str) -> bool:
    from config.celery_app import app

    replies = app.control.inspect(timeout=0.5).active_queues() or {}
    return any(q.get("name") == queue for queues in replies.values() for q in queues)


# --- report -----------------------------------------------------------------------------------------------

def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def report(*, samples: list[Sample], burst_ids: list[int], burst_s: float, local_db: bool, baseline_n: int) -> None:
    seen_p50, seen_p95 = percentiles([s.seen_s for s in samples])
    print(f"\nclosed loop: {len(samples)} submissions; submit → graded seen by the client: "
          f"p50 {_ms(seen_p50)}  p95 {_ms(seen_p95)}")
    print(f"burst: {len(burst_ids)} submissions, all graded and seen in {burst_s:.2f} s "
          f"= {len(burst_ids) / burst_s:.1f} graded/s (client view)")
    if not local_db:
        return
    latencies, _, (waiting, grading) = db_latencies([s.submission_id for s in samples])
    _, burst_rate, _ = db_latencies(burst_ids)
    p50, p95 = percentiles(latencies)
    base_times, base_rate = in_process_baseline(baseline_n)
    base_p50, base_p95 = percentiles(base_times)
    floor_times, floor_rate = noop_floor(baseline_n, 1)
    floor_p50, floor_p95 = percentiles(floor_times)
    print("\n                         pipeline (HTTP→Redis→worker→DB)   floor (no-op task, same broker+DB)   ratio")
    print(f"  latency p50           {_ms(p50):>20}              {_ms(floor_p50):>20}   {p50 / floor_p50:8.1f}×")
    print(f"  latency p95           {_ms(p95):>20}              {_ms(floor_p95):>20}   {p95 / floor_p95:8.1f}×")
    print(f"  graded/s              {burst_rate:17.1f} /s              {floor_rate:17.1f} /s   "
          f"{burst_rate / floor_rate:8.2f}× of the floor")
    print("  (targets: numeric submit → graded p50 ≤ 15 ms and ≥ 200 graded/s end to end)")
    print("\n                         pipeline (HTTP→Redis→worker→DB)   baseline (in-process grading)   ratio")
    print(f"  latency p50           {_ms(p50):>20}              {_ms(base_p50):>20}   {p50 / base_p50:8.1f}×")
    print(f"  latency p95           {_ms(p95):>20}              {_ms(base_p95):>20}   {p95 / base_p95:8.1f}×")
    print(f"  graded/s              {burst_rate:17.1f} /s              {base_rate:17.1f} /s   "
          f"{base_rate / burst_rate:8.1f}× fewer")
    print(f"  p50 split: {_ms(waiting).strip()} queued (created → claimed), {_ms(grading).strip()} grading "
          "(claimed → graded)")
    print("  (pipeline latency = graded_at − created_at in the database; targets: numeric p50 ≤ 15 ms and "
          "≥ 200 graded/s, code p50 ≤ 80 ms and p95 ≤ 200 ms)")
    if WORK == CODE_WORK:
        report_sandbox_floor(p50, p95)


def report_sandbox_floor(p50: float, p95: float, jobs: int = 60) -> None:
    """Code parts beside their floor, measured now on the same sandbox: one bare job (no harness)."""
    from django.conf import settings

    from sandbox.client import run_job

    times = []
    for _ in range(jobs):
        started = time.perf_counter()
        result = run_job(source="import sandbox_guest\nsandbox_guest.emit(7.0)\n", socket_path=settings.SANDBOX_SOCKET,
                         allow_insecure_dev_backend=settings.SANDBOX_ALLOW_INSECURE_DEV_BACKEND)
        if result.status != "ok":
            raise RuntimeError(f"bare sandbox job failed: {result.status} {result.error}")
        times.append(time.perf_counter() - started)
    bare_p50, bare_p95 = percentiles(times)
    print(f"  floor: one bare sandbox job p50 {_ms(bare_p50).strip()}, p95 {_ms(bare_p95).strip()}; "
          f"code part submit → graded is {p50 / bare_p50:.1f}× (p50) and {p95 / bare_p95:.1f}× (p95) of it")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=400, help="submissions per phase (default 400)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent HTTP clients (default 4)")
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 2, help="worker processes")
    parser.add_argument("--quick", action="store_true", help="a small run (< 1 minute)")
    parser.add_argument("--server", choices=["gunicorn", "runserver"],
                        default="gunicorn" if importlib.util.find_spec("gunicorn") else "runserver",
                        help="web server of the private stack (default: gunicorn, as in docker-compose)")
    parser.add_argument("--url", help="measure a running server instead of starting one")
    parser.add_argument("--token", help="API token of a student enrolled in the demo course (with --url)")
    parser.add_argument("--students", type=int, help="SPEC §8 burst instead: this many students, one submission each")
    parser.add_argument("--seconds", type=float, default=60, help="with --students: spread over this many seconds")
    parser.add_argument("--postgres", action="store_true",
                        help="a private PostgreSQL cluster (initdb in a temp dir) instead of SQLite, as in production")
    parser.add_argument("--kind", choices=["numeric", "code"], default="numeric",
                        help="numeric answers, or code parts run in the sandbox (targets p50 ≤ 80 ms, p95 ≤ 200 ms)")
    args = parser.parse_args(argv)
    if args.kind == "code":
        WORK[:] = CODE_WORK
    count = 120 if args.quick else args.n
    if args.url and not args.token:
        parser.error("--url needs --token")
    with tempfile.TemporaryDirectory(prefix="numeric-bench-") as tmp:
        if args.url:
            run(args.url, [args.token] * args.clients, count, local_db=False)
            return
        postgres = None
        if args.postgres:  # a cluster of the bench's own (bench/stack.py), removed at the end
            from stack import PrivatePostgres

            postgres = PrivatePostgres()
            postgres.create()
        try:
            _setup_django(Path(tmp), postgres.url if postgres else None)
            print(f"starting a private stack in {tmp} ({args.server}, worker -c {args.concurrency}, "
                  f"{args.clients} clients, {'PostgreSQL' if postgres else 'SQLite'}) …")
            with private_stack(args.students or args.clients, args.concurrency, args.server) as (url, tokens):
                if args.students:
                    report_open_loop(*open_loop(url, tokens, args.seconds), students=args.students)
                else:
                    run(url, tokens, count, local_db=True)
        finally:
            if postgres is not None:
                from django.db import connections

                connections.close_all()
                postgres.remove()


STACK_GROUPS: dict[str, int] = {}  # "web"/"worker" → process group id of a private stack


def group_cpu_seconds(pgid: int) -> float:
    """User + system CPU of every live process in a process group (Linux /proc), in seconds."""
    ticks = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # fields after the name: state ppid pgrp … utime(11) stime(12)
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def run(url: str, tokens: list[str], count: int, *, local_db: bool) -> None:
    closed_loop(url, tokens, len(WORK))  # warm-up: caches, connections, worker imports
    samples = closed_loop(url, tokens, count)
    before = {name: group_cpu_seconds(pgid) for name, pgid in STACK_GROUPS.items()}
    burst_ids, burst_s = burst(url, tokens, count)
    if STACK_GROUPS:
        time.sleep(0.5)  # the last announcements and acks
        spent = {name: (group_cpu_seconds(pgid) - before[name]) / len(burst_ids) * 1000
                 for name, pgid in STACK_GROUPS.items()}
        print(f"\nCPU per submission in the burst: web {spent['web']:.1f} ms (the POST and the waiting GET), "
              f"worker {spent['worker']:.1f} ms (Celery and grading); two cores give at most "
              f"{2000 / (spent['web'] + spent['worker']):.0f} graded/s at that cost")
    report(samples=samples, burst_ids=burst_ids, burst_s=burst_s, local_db=local_db, baseline_n=max(count, 200))


if __name__ == "__main__":
    main()
