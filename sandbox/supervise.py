"""The proxy's watch over a running job: capped output, the wall clock, the client.

Reads the job's stdout, stderr and result channel as opaque bytes (never
parsing them here) and the init's event messages. Stops the job the moment a
cap is exceeded, the deadline passes, the OOM killer strikes or the client
hangs up; the job is over when the init reports it and every stream is closed.
"""

from __future__ import annotations

import json
import os
import selectors
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_EVENTS_CAP = 64 * 1024
_CHUNK = 65536
KILL_GRACE_SECONDS = 2.0
OOM_POLL_SECONDS = 0.2
_FINAL_EVENTS = ("exited", "failure")


@dataclass
class Stream:
    fd: int
    cap: int
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    def feed(self, chunk: bytes) -> bool:
        """Keep at most `cap` bytes; return False once the cap is exceeded."""
        room = self.cap - len(self.data)
        self.data += chunk[:max(room, 0)]
        if len(chunk) > room:
            self.truncated = True
        return not self.truncated


@dataclass
class Watch:
    streams: dict[str, Stream]
    events: list[dict[str, Any]] = field(default_factory=list)
    timed_out: bool = False
    overflow: str | None = None
    client_gone: bool = False
    init_alive: bool = True
    _pending: bytearray = field(default_factory=bytearray)

    def status_line(self, chunk: bytes) -> None:
        """Collect the init's newline-terminated JSON events."""
        if len(self._pending) + len(chunk) <= _EVENTS_CAP:
            self._pending += chunk
        *lines, rest = self._pending.split(b"\n")
        self._pending = bytearray(rest)
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                self.events.append(event)

    def event(self, name: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e.get("event") == name), None)

    def finished(self) -> bool:
        return any(self.event(name) for name in _FINAL_EVENTS) or not self.init_alive


def _read(fd: int) -> bytes | None:
    """A chunk, b"" at EOF, or None on a spurious wake-up."""
    try:
        return os.read(fd, _CHUNK)
    except BlockingIOError:
        return None
    except OSError:
        return b""


@dataclass
class _Loop:
    watch: Watch
    kill: Callable[[], None]
    hard_kill: Callable[[], None]
    names: dict[int, str]
    status_fd: int
    client_fd: int
    oom_check: Callable[[], bool] | None
    killed_at: float | None = None
    hard_killed: bool = False

    def stop(self) -> None:
        if self.killed_at is None:
            self.killed_at = time.monotonic()
            try:
                self.kill()
            except OSError:
                self.escalate()

    def escalate(self) -> None:
        """The init did not finish the job in time: kill the init, and the namespace with it."""
        self.hard_kill()
        self.hard_killed, self.watch.init_alive = True, False
        self.killed_at = time.monotonic()

    def timeout(self, deadline: float) -> float:
        if self.killed_at is not None:
            return max(0.0, self.killed_at + KILL_GRACE_SECONDS - time.monotonic())
        remaining = max(0.0, deadline - time.monotonic())
        return min(remaining, OOM_POLL_SECONDS) if self.oom_check else remaining

    def quiet(self, deadline: float) -> bool:
        """Nothing happened for a while; return False to give up waiting."""
        if self.killed_at is not None:
            if self.hard_killed:
                return False  # something outlived even that (development backend): stop waiting
            self.escalate()
        elif self.oom_check is not None and self.oom_check():
            self.stop()  # one process is gone; the rest would only hang until the deadline
        elif time.monotonic() >= deadline:
            self.watch.timed_out = True
            self.stop()
        return True

    def handle(self, fd: int, chunk: bytes) -> bool:
        """Process one read; return False when `fd` is finished."""
        if fd == self.client_fd:
            self.watch.client_gone = True  # the request is complete: any byte or EOF means abandon
            self.stop()
            return False
        if fd == self.status_fd:
            if not chunk:
                self.watch.init_alive = False
            self.watch.status_line(chunk)
            # After the final event the init's next message ("ready", with descriptors)
            # belongs to the next proxy: stop reading.
            return bool(chunk) and not self.watch.finished()
        if not chunk:
            return False
        if not self.watch.streams[self.names[fd]].feed(chunk) and self.watch.overflow is None:
            self.watch.overflow = self.names[fd]
            self.stop()
        return True


def watch_job(watch: Watch, *, status_fd: int, client_fd: int, deadline: float, kill: Callable[[], None],
              hard_kill: Callable[[], None], oom_check: Callable[[], bool] | None = None) -> None:
    """Until the init reports the job over and every stream is closed; kill on any breach."""
    names = {stream.fd: name for name, stream in watch.streams.items()}
    loop = _Loop(watch, kill, hard_kill, names, status_fd, client_fd, oom_check)
    selector = selectors.DefaultSelector()
    for fd in [*names, status_fd, client_fd]:
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ)
    streams_open = set(names)
    while streams_open or not watch.finished():
        ready = selector.select(loop.timeout(deadline))
        if not ready and not loop.quiet(deadline):
            break
        for key, _ in ready:
            chunk = _read(key.fd)
            if chunk is not None and not loop.handle(key.fd, chunk):
                selector.unregister(key.fd)
                streams_open.discard(key.fd)
    selector.close()
    for fd in names:
        os.close(fd)
