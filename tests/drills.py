"""Helpers for the failure drills: a private redis-server, broker switching, concurrent callers."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from django.db import connection

from config.celery_app import app
from grader.models import Submission


class PrivateRedis:
    """A redis-server of the drill's own on a free port, so restarting it never touches the shared one."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        _wait(lambda: _ping(self.port), "redis did not start")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _ping(port: int) -> bool:
    import redis

    try:
        return bool(redis.Redis(port=port, socket_connect_timeout=0.2).ping())
    except redis.RedisError:
        return False


@contextmanager
def broker(url: str) -> Iterator[None]:
    """Point this process's Celery producer at another broker for the duration."""
    old = app.conf.broker_url
    _switch(url)
    try:
        yield
    finally:
        _switch(old)


def _switch(url: str) -> None:
    from kombu import pools

    app.conf.broker_url = url
    pools.reset()  # kombu's global pools stay keyed by the old URL otherwise
    app._pool = None
    app.amqp._producer_pool = None


def wait_graded(ids: Iterable[int], timeout: float = 60) -> list[Submission]:
    wanted = list(ids)

    def done() -> bool:
        finished = Submission.objects.filter(id__in=wanted, status__in=["graded", "error"]).count()
        return finished == len(wanted)

    _wait(done, f"submissions {wanted} not graded in {timeout}s", timeout)
    return list(Submission.objects.filter(id__in=wanted).select_related("result"))


def _wait(predicate: object, message: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(message)


def at_once(target: Callable[[], None], count: int, timeout: float = 60) -> None:
    """`target` run by `count` threads at the same time, each closing its own database connection."""

    def run() -> None:
        try:
            target()
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
