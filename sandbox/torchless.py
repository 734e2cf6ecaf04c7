"""The torch-less sibling server, for jobs that must not have torch ("by hand" parts).

`serve()` forks it before torch is imported: a zygote of its own whose memory never
held torch, on `<socket>.torchless`, with its own seats (the uids after the torch
seats) and a private root in which torch's directories are empty. It warms the
preloaded modules that import without torch. Jobs there are forked warm like any
other (no fresh interpreter), and torch is not reachable by any path: not in memory,
not on disk. The two servers live and die together.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from sandbox import linux
from sandbox.backends import BackendUnavailable
from sandbox.client import TORCHLESS_SUFFIX

log = logging.getLogger("sandbox")
READY_TIMEOUT_SECONDS = 120.0
STOP_SECONDS = 20.0
_READY = b"R"


def socket_path(main_socket: str) -> str:
    """Where the torch-less server of the server on `main_socket` listens."""
    return main_socket + TORCHLESS_SUFFIX


@dataclass
class Sibling:
    pid: int
    ready_fd: int  # the sibling writes _READY, or a failure message, then closes


def start(run: Callable[[int], int]) -> Sibling:
    """Fork the sibling, which calls `run(ready_fd)` and exits with its status."""
    parent = os.getpid()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 2
        try:
            os.close(read)
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGTERM)  # drains and exits when the server dies
            if os.getppid() != parent:
                os._exit(code)  # the server died before the line above
            code = run(write)
        except BaseException as exc:  # reported to the server, which refuses to start
            log.exception("torch-less server failed")
            with contextlib.suppress(OSError):
                os.write(write, f"E{exc!r}".encode()[:2000])
        finally:
            os._exit(code)
    os.close(write)
    return Sibling(pid, read)


def report_ready(fd: int) -> None:
    os.write(fd, _READY)
    os.close(fd)


def await_ready(sibling: Sibling, timeout: float = READY_TIMEOUT_SECONDS) -> None:
    readable, _, _ = select.select([sibling.ready_fd], [], [], timeout)
    message = os.read(sibling.ready_fd, 4096) if readable else b""
    os.close(sibling.ready_fd)
    sibling.ready_fd = -1
    if message != _READY:
        why = message[1:].decode(errors="replace") or "it exited or did not answer in time"
        raise BackendUnavailable(f"the torch-less sandbox server did not start: {why}")


def stop(sibling: Sibling) -> None:
    """SIGTERM (it drains its jobs), then SIGKILL when it takes too long."""
    if sibling.ready_fd >= 0:
        os.close(sibling.ready_fd)
        sibling.ready_fd = -1
    with contextlib.suppress(ProcessLookupError):
        os.kill(sibling.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(sibling.pid, os.WNOHANG)
        except ChildProcessError:
            return  # already reaped by the zygote's loop
        if pid:
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.kill(sibling.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(sibling.pid, 0)
