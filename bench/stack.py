"""A private grading stack for the drills (bench/load.py, bench/chaos.py, tests/test_drills.py):
a fresh SQLite database, optionally a private redis-server, the sandbox server, one worker
pool per lane and gunicorn, each a process the drill can kill and restart."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "test-output"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_until(check: Callable[[], bool], what: str, timeout: float = 90,
               proc: subprocess.Popen[bytes] | None = None) -> float:
    """Seconds until `check()` held; raises when it does not within `timeout`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: process exited early (exit {proc.returncode})")
        if check():
            return time.monotonic() - started
        time.sleep(0.05)
    raise RuntimeError(f"{what} not within {timeout}s")


def stop(proc: subprocess.Popen[bytes] | None, sig: int = signal.SIGTERM) -> None:
    if proc is None or proc.poll() is not None:
        return
    _signal(proc, sig)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        _signal(proc, signal.SIGKILL)
        proc.wait()


def _signal(proc: subprocess.Popen[bytes], sig: int) -> None:
    """The process group when the process leads one (our spawns), else the process alone."""
    try:
        if os.getpgid(proc.pid) == proc.pid:
            os.killpg(proc.pid, sig)
            return
    except ProcessLookupError:
        return
    proc.send_signal(sig)


class PrivateRedis:
    """A redis-server of the drill's own on a free port: restarting it never touches the machine's."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.proc = subprocess.Popen([binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        wait_until(lambda: port_open(self.port), "private redis", 20, self.proc)

    def kill(self) -> None:
        stop(self.proc, signal.SIGKILL)


class PrivatePostgres:
    """A PostgreSQL cluster of the drill's own (initdb in its work directory, a free port, run as the
    `postgres` user): stopping it never touches the machine's server or anyone else's database."""

    def __init__(self) -> None:
        self.port = free_port()
        self.home = Path(tempfile.mkdtemp(prefix="drill-postgres-"))  # the drill's work dir is root's alone
        self.data, self.sockets = self.home / "data", self.home / "sockets"
        self.bin = Path(shutil.which("pg_ctl") or "/usr/lib/postgresql/bin/pg_ctl").parent
        self.user = "postgres" if os.geteuid() == 0 else None  # the server refuses to run as root

    @property
    def url(self) -> str:
        return f"postgres://drill@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        done = subprocess.run([str(self.bin / args[0]), *args[1:]], user=self.user, capture_output=True, text=True,
                              timeout=120)
        if done.returncode:
            raise RuntimeError(f"{args[0]} failed: {done.stderr.strip()[-500:]}")

    def create(self) -> None:
        for path in (self.home, self.data, self.sockets):
            path.mkdir(exist_ok=True)
            if self.user:
                shutil.chown(path, self.user)
        self._run("initdb", "-D", str(self.data), "-U", "drill", "--auth=trust", "--no-sync")
        self.start()

    def start(self) -> None:
        options = f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.data / "server.log"), "-w", "start")

    def stop(self) -> None:
        """Fast shutdown: open connections are cut, as when the database host goes away."""
        with contextlib.suppress(RuntimeError):
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)


class Stack:
    """Django must be set up (setup_django) before start(); every process shares its database."""

    def __init__(self, *, workdir: Path, redis: PrivateRedis | None, postgres: PrivatePostgres | None = None,
                 numeric_workers: int = 2, code_workers: int = 2) -> None:
        self.workdir, self.redis, self.postgres = workdir, redis, postgres
        self.redis_url = redis.url if redis else "redis://127.0.0.1:6379/0"
        self.queue = f"drill-{uuid.uuid4().hex[:8]}"
        self.numeric_workers, self.code_workers = numeric_workers, code_workers
        self.port = free_port()
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.restarts: list[str] = []
        self._closing = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        return {**os.environ, "CELERY_QUEUE": self.queue, "REDIS_URL": self.redis_url,
                "CELERY_BROKER_URL": self.redis_url, "DEBUG": "0", "SECURE_COOKIES": "0",
                "LOG_LEVEL": "WARNING", "LOG_FORMAT": "text", "GRADER_RATE_LIMIT": "0",
                "GRADER_SWEEP_EVERY": "3", "GRADER_SWEEP_QUEUED_AFTER": "5", "GRADER_SWEEP_RUNNING_AFTER": "20"}

    def _spawn(self, name: str, cmd: list[str]) -> subprocess.Popen[bytes]:
        LOGS.mkdir(exist_ok=True)
        with open(LOGS / f"drill-{name}.log", "ab") as out:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=self.env(), stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.procs[name] = proc
        return proc

    def start_sandbox(self) -> None:
        from django.conf import settings

        from grading.reference import SANDBOX_PRELOAD
        from sandbox.launch import spawn_server

        with open(LOGS / "drill-sandbox.log", "ab") as log:
            for uid_base in range(63000, 64500, 100):
                try:
                    self.procs["sandbox"] = spawn_server(
                        settings.SANDBOX_SOCKET, preload=SANDBOX_PRELOAD,
                        package_dirs=(str(ROOT / "chainrule"),),
                        uid_base=uid_base, stderr=log.fileno(),
                        allow_insecure_dev_backend=settings.SANDBOX_ALLOW_INSECURE_DEV_BACKEND)
                    return
                except Exception:  # that uid range is held by another session's sandbox
                    continue
        raise RuntimeError("no free sandbox uid range")

    def kill_sandbox(self) -> None:
        proc = self.procs.pop("sandbox", None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def start_worker(self, lane: str) -> subprocess.Popen[bytes]:
        queue = {"numeric": self.queue, "code": f"{self.queue}-code",
                 "maintenance": f"{self.queue}-maintenance,{self.queue}-lms"}[lane]  # LMS calls beside the sweeper
        pool = ["--pool", "threads", "-c", str(self.code_workers)] if lane == "code" else \
            ["--pool", "prefork", "-c", str(self.numeric_workers if lane == "numeric" else 1)]
        beat = ["--beat", "--schedule", str(self.workdir / "beat-schedule")] if lane == "maintenance" else []
        return self._spawn(f"worker-{lane}", [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queue,
                                              *pool, *beat, "-n", f"{lane}-{uuid.uuid4().hex[:6]}@%h",
                                              "--without-gossip", "--without-mingle", "--loglevel", "WARNING"])

    def start(self, lanes: tuple[str, ...] = ("numeric", "code", "maintenance")) -> None:
        self.start_sandbox()
        for lane in lanes:
            self.start_worker(lane)
        web = self._spawn("web", [sys.executable, "-m", "gunicorn", "config.wsgi", "-c", "config/gunicorn.py",
                                  "-b", f"127.0.0.1:{self.port}", "--log-level", "warning"])
        wait_until(lambda: port_open(self.port), "web server", 90, web)
        threading.Thread(target=self._supervise, daemon=True).start()
        time.sleep(3)  # the workers import torch; submissions made meanwhile simply wait on the queue

    def _supervise(self) -> None:
        """Restart a worker that exited on its own, as docker's `restart: unless-stopped` does (Celery
        exits on some broker errors, e.g. a Redis restart while it is still starting up)."""
        while not self._closing.wait(0.5):
            for lane in ("numeric", "code", "maintenance"):
                proc = self.procs.get(f"worker-{lane}")
                if proc is not None and proc.poll() is not None and not self._closing.is_set():
                    self.restarts.append(lane)
                    print(f"  supervisor: the {lane} worker exited ({proc.returncode}); restarted", flush=True)
                    self.start_worker(lane)

    def kill_worker(self, lane: str) -> None:
        """SIGKILL; the supervisor starts a new one."""
        stop(self.procs.get(f"worker-{lane}"), signal.SIGKILL)

    def close(self) -> None:
        self._closing.set()
        for name, proc in list(self.procs.items()):
            stop(proc)
            self.procs.pop(name, None)


def setup_django(workdir: Path, *, database_url: str | None = None, private: bool = True) -> None:
    """A fresh SQLite database in `workdir` (or DATABASE_URL), the catalog loaded by the caller.
    `private`: a stack of the drill's own, with its own sandbox server too."""
    os.environ["DATABASE_URL"] = database_url or f"sqlite:///{workdir / 'drill.sqlite3'}"
    if private:
        os.environ["SANDBOX_SOCKET"] = str(workdir / "sandbox.sock")
    os.environ.setdefault("SECRET_KEY", "drill-only-" + uuid.uuid4().hex)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
