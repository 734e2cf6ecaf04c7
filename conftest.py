"""Shared fixtures: the seed catalog, role users, a real Celery worker and web server.

The catalog is loaded once per session into the test database and committed, so
processes started by the tests (worker, web server) see it. Integration tests use
`live_db` (committed writes, no rollback) and unique users per test.
"""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parent
OUTPUT = ROOT / "test-output"
OUTPUT.mkdir(exist_ok=True)
_names = itertools.count()


@pytest.fixture(scope="session")
def sandbox_socket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real sandbox server for the session; workers and web servers get its socket."""
    from django.conf import settings

    path = str(tmp_path_factory.mktemp("sandbox") / "sandbox.sock")
    server = _spawn_sandbox(path)
    old = settings.SANDBOX_SOCKET
    settings.SANDBOX_SOCKET = os.environ["SANDBOX_SOCKET"] = path
    yield path
    settings.SANDBOX_SOCKET = old
    server.terminate()
    server.wait(timeout=30)


def _spawn_sandbox(path: str) -> subprocess.Popen[bytes]:
    """Start on the first free range of seat uids: another test session may hold one."""
    from grading.reference import SANDBOX_PRELOAD
    from sandbox.client import SandboxUnavailable
    from sandbox.launch import spawn_server

    OUTPUT.mkdir(exist_ok=True)
    for uid_base in range(61000, 63000, 100):
        with open(OUTPUT / "sandbox.log", "ab") as log:
            try:
                return spawn_server(path, preload=SANDBOX_PRELOAD,
                                    package_dirs=(str(ROOT / "chainrule"),),
                                    uid_base=uid_base, stderr=log.fileno())
            except SandboxUnavailable:
                continue
    raise RuntimeError("no free sandbox uid range; see test-output/sandbox.log")


@pytest.fixture(scope="session")
def django_db_setup(django_test_environment: None, django_db_blocker: Any, sandbox_socket: str) -> Iterator[None]:
    """Always create the test database, even when no test is marked django_db (integration
    tests use live_db), so nothing ever runs against the development database."""
    from django.test.utils import setup_databases, teardown_databases

    with django_db_blocker.unblock():
        config = setup_databases(verbosity=0, interactive=False, aliases={"default"}, serialized_aliases=set())
        call_command("load_assignments", verbosity=0)
    yield
    with django_db_blocker.unblock():
        teardown_databases(config, verbosity=0)


@pytest.fixture
def live_db(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """Database access with real commits, for tests that talk to other processes."""
    with django_db_blocker.unblock():
        yield


@dataclass
class Person:
    user: Any
    password: str
    token: str


@pytest.fixture
def make_user(django_db_blocker: Any) -> Callable[..., Person]:
    from assignments.services import course_demo
    from grader.accounts import user_create

    def make(role: str = "student", prefix: str = "") -> Person:
        name = f"{prefix or role}-{uuid.uuid4().hex[:8]}-{next(_names)}"
        password = f"pw-{uuid.uuid4().hex}"
        with django_db_blocker.unblock():
            user, token = user_create(username=name, role=role, course=course_demo(), password=password,
                                      with_token=True)
        assert token is not None
        return Person(user=user, password=password, token=token)

    return make


@pytest.fixture
def student(make_user: Callable[..., Person]) -> Person:
    return make_user("student")


@pytest.fixture
def other_student(make_user: Callable[..., Person]) -> Person:
    return make_user("student", prefix="other")


@pytest.fixture
def instructor(make_user: Callable[..., Person]) -> Person:
    return make_user("instructor")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def database_url() -> str:
    from django.db import connection

    conf = connection.settings_dict
    if conf["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{conf['NAME']}"
    user = conf.get("USER") or "postgres"
    return f"postgres://{user}@{conf.get('HOST') or '127.0.0.1'}:{conf.get('PORT') or 5432}/{conf['NAME']}"


def service_env(**extra: str) -> dict[str, str]:
    """What the processes a test starts need, said explicitly: production defaults (DEBUG off),
    the session's secret key (settings put it in os.environ), static files served from static/."""
    env = dict(os.environ)
    env.update({"DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "0",
                "SECURE_COOKIES": "0", "WHITENOISE_USE_FINDERS": "1", "LOG_FORMAT": "text",
                "LTI_ALLOW_HTTP": "1"}, **extra)  # the test LMS serves plain HTTP on loopback
    return env


@pytest.fixture(scope="session")
def grading_queue() -> str:
    """A queue of this test session's own, so a stray worker never steals its tasks."""
    from config.celery_app import app

    queue = f"test-grading-{uuid.uuid4().hex[:8]}"
    app.conf.task_default_queue = queue
    return queue


def start_worker(queue: str, log_name: str, *, lanes: tuple[str, ...] = ("", "-code", "-maintenance", "-lms"),
                 concurrency: int = 1, pool: str = "prefork", **extra_env: str) -> subprocess.Popen[bytes]:
    """A worker consuming the lanes of `queue` (infra/lanes.py): all four by default."""
    OUTPUT.mkdir(exist_ok=True)
    log = open(OUTPUT / log_name, "ab")  # closed with the process
    queues = ",".join(f"{queue}{lane}" for lane in lanes)
    cmd = [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queues, "-c", str(concurrency),
           "-n", f"{log_name}-{uuid.uuid4().hex[:6]}@%h",
           "--pool", pool, "--without-gossip", "--without-mingle", "--loglevel", "INFO"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=service_env(CELERY_QUEUE=queue, **extra_env),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    _wait_for_log(OUTPUT / log_name, "ready.", proc)
    return proc


def _wait_for_log(path: Path, needle: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    start = path.stat().st_size if path.exists() else 0
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited early; see {path}")
        with open(path, "rb") as fh:
            fh.seek(start)
            if needle.encode() in fh.read():
                return
        time.sleep(0.1)
    raise RuntimeError(f"{needle!r} not seen in {path} within {timeout}s")


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    import signal

    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="session")
def worker(django_db_setup: None, grading_queue: str) -> Iterator[subprocess.Popen[bytes]]:
    """The pools of production: numbers/formulas with the sweeper, and code on its own
    (threads: a code task mostly waits for the sandbox)."""
    proc = start_worker(grading_queue, "worker.log", lanes=("", "-maintenance", "-lms"))
    code = start_worker(grading_queue, "worker-code.log", lanes=("-code",), concurrency=2, pool="threads")
    yield proc
    stop_process(code)
    stop_process(proc)


@pytest.fixture(scope="session")
def web_server(django_db_setup: None, grading_queue: str) -> Iterator[str]:
    """The real web server (runserver, no reloader) on a free port, sharing the test database."""
    port = free_port()
    OUTPUT.mkdir(exist_ok=True)
    log = open(OUTPUT / "web.log", "ab")
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT, env=service_env(CELERY_QUEUE=grading_queue), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    _wait_for_port(port, proc)
    yield f"http://127.0.0.1:{port}"
    stop_process(proc)


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("web server exited early; see test-output/web.log")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"web server not listening on {port}")
