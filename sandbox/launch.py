"""Starting and stopping a sandbox server process from Python (Django, tests, the CLI)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator

from sandbox.client import SandboxUnavailable, ping
from sandbox.network import TlsFiles

DEFAULT_UID_BASE = 60000


def spawn_server(
    socket_path: str,
    *,
    slots: int | None = None,
    uid_base: int = DEFAULT_UID_BASE,
    preload: tuple[str, ...] = (),
    package_dirs: tuple[str, ...] = (),
    backend: str = "auto",
    allow_insecure_dev_backend: bool = False,
    python: str | None = None,
    env: dict[str, str] | None = None,
    stderr: int | None = None,
    startup_timeout: float = 120.0,
    listen: str | None = None,
    tls: TlsFiles | None = None,
) -> subprocess.Popen[bytes]:
    """Start `python -m sandbox serve` with an EMPTY environment and wait until it answers.

    The empty environment is the point: the zygote's memory is inherited by every
    job, so it must never have seen a secret (database URLs, API keys, ...). `listen` (`HOST:PORT`, with
    `tls`) also takes jobs over mutual TLS there.
    """
    command = [python or sys.executable, "-m", "sandbox", "serve", "--socket", socket_path,
               "--uid-base", str(uid_base), "--backend", backend]
    command += ["--slots", str(slots)] if slots else []
    command += [arg for name in preload for arg in ("--preload", name)]
    command += [arg for path in package_dirs for arg in ("--package-dir", path)]
    command += ["--allow-insecure-dev-backend"] if allow_insecure_dev_backend else []
    if listen:
        if tls is None:
            raise ValueError("listening on the network needs the deployment's TLS files")
        command += ["--listen", listen, "--tls-ca", tls.ca, "--tls-cert", tls.cert, "--tls-key", tls.key]
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    process = subprocess.Popen(command, env={} if env is None else env, cwd=package_parent,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        _wait_until_ready(socket_path, process, startup_timeout)
    except BaseException:
        stop_server(process)
        raise
    return process


def _wait_until_ready(socket_path: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SandboxUnavailable(f"the sandbox server exited with status {process.returncode} during start-up")
        if os.path.exists(socket_path):
            with contextlib.suppress(SandboxUnavailable):
                ping(socket_path=socket_path, timeout=5.0)
                return
        time.sleep(0.05)
    raise SandboxUnavailable(f"the sandbox server did not answer on {socket_path} within {timeout:g} s")


def stop_server(process: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    """SIGTERM, then SIGKILL if it does not stop in time."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def running_server(socket_path: str, **options: object) -> Iterator[subprocess.Popen[bytes]]:
    process = spawn_server(socket_path, **options)  # type: ignore[arg-type]
    try:
        yield process
    finally:
        stop_server(process)
