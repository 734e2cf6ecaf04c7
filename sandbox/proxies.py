"""The proxies' parent: a small process forked before torch is imported, which forks every proxy.

A proxy runs pure-Python sandbox code only (it reads the request, feeds the student process,
watches, answers). Forked from the zygote it was a copy of the warm torch image (~240 MB): each
job paid for copying its page tables, for tearing them down again, and for the copy-on-write faults
the zygote took afterwards, several milliseconds of CPU off the job's path but on the machine's.
Forked from here, a proxy is a copy of a process that has imported the sandbox package and nothing
else.

Each zygote forks its spawner before it prepares anything (torch, preloads, the root, the seats'
inits): it never holds more than the server's configuration, and never a secret (the TLS listener
is forked before the zygote as well). The zygote asks for a proxy by passing its end of the proxy's
line and the seat init's line (`send_fds`); the spawner forks the proxy, answers its pid, closes
both descriptors again, and when the proxy ends, reaps it and reports its wait status to the
zygote on a second socket. It never reads a connection or a job. It dies with its zygote
(PR_SET_PDEATHSIG), and its proxies die with it.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import select
import signal
import socket
import struct
import sys
from dataclasses import dataclass

from sandbox import linux, proxy
from sandbox.context import ProxyContext, Seat

log = logging.getLogger("sandbox")
_REQUEST = struct.Struct("=ii")  # seat index, init pid (with two descriptors: the proxy's line, the init's)
_PID = struct.Struct("=i")  # the proxy's pid, or -errno
_ENDED = struct.Struct("=ii")  # pid, wait status
REPLY_TIMEOUT_SECONDS = 10.0


class SpawnerGone(OSError):
    """The spawner did not answer: the zygote stops (its proxies are gone with it)."""


@dataclass
class Spawner:
    """The zygote's handle on its spawner."""

    pid: int
    requests: socket.socket  # ask for a proxy, read its pid (SOCK_SEQPACKET: one message each)
    ended: socket.socket  # (pid, wait status) of every proxy that ended; non-blocking
    alive: bool = True  # False once the zygote has reaped it
    failed: bool = False  # it did not answer: killed, never asked again (a late answer must not be read)

    def spawn(self, seat: Seat, init_pid: int, proxy_end: socket.socket, init_control: socket.socket) -> int:
        """Fork a proxy for `seat`; return its pid."""
        if self.failed:
            raise SpawnerGone("the proxy spawner failed")
        try:
            socket.send_fds(self.requests, [_REQUEST.pack(seat.index, init_pid)],
                            [proxy_end.fileno(), init_control.fileno()])
            readable, _, _ = select.select([self.requests], [], [], REPLY_TIMEOUT_SECONDS)
            reply = self.requests.recv(_PID.size) if readable else b""
        except OSError as exc:
            reply, why = b"", str(exc)
        else:
            why = "no answer"
        if len(reply) != _PID.size:
            self.failed = True
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)  # its proxies die with it; the zygote stops when it reaps it
            raise SpawnerGone(f"the proxy spawner is gone ({why})")
        (pid,) = _PID.unpack(reply)
        if pid < 0:
            raise OSError(-pid, f"the proxy spawner could not fork: {os.strerror(-pid)}")
        if pid == 0 or _parent_of(pid) not in (self.pid, None):
            # Not its child: matching ended proxies by that pid would lose the seat for good, and the
            # drain would SIGKILL it (or, for 0, the server's whole process group).
            self.failed = True
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)
            raise SpawnerGone(f"the proxy spawner answered pid {pid}, not a child of its own")
        return pid

    def ended_proxies(self) -> list[tuple[int, int]]:
        """(pid, wait status) of the proxies that ended since the last call."""
        ended: list[tuple[int, int]] = []
        while True:
            try:
                message = self.ended.recv(_ENDED.size)
            except OSError:  # nothing more now (BlockingIOError), or closed
                return ended
            if len(message) != _ENDED.size:
                return ended  # EOF: the spawner is gone, which the zygote learns by reaping it
            ended.append(_ENDED.unpack(message))

    def stop(self) -> None:
        """EOF on its requests: the spawner exits (reports of proxies that end meanwhile still come)."""
        self.requests.close()

    def fds(self) -> list[int]:
        """Its descriptors still open in the zygote (for a child of the zygote to close)."""
        return [fd for fd in (self.requests.fileno(), self.ended.fileno()) if fd >= 0]


def _parent_of(pid: int) -> int | None:
    """The parent of `pid`, or None when that cannot be told (it has already ended and been reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rpartition(b")")[2].split()
    except OSError:
        return None
    return int(fields[1])


def start(seats: list[Seat], ctx: ProxyContext) -> Spawner:
    """Fork the spawner. Call it before torch (or anything big) is imported."""
    if sys.modules.get("torch") is not None:
        raise RuntimeError("the proxy spawner must be forked before torch is imported")
    requests, their_requests = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ended, their_ended = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            requests.close()
            ended.close()
            _close_all_but(0, 1, 2, their_requests.fileno(), their_ended.fileno())  # nothing else for proxies
            if sys.platform.startswith("linux"):
                linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # zygote gone: spawner (and proxies) gone
            if os.getppid() == parent:
                _serve(their_requests, their_ended, {seat.index: seat for seat in seats}, ctx)
                code = 0
        except BaseException:
            log.exception("the proxy spawner failed")
        finally:
            os._exit(code)
    their_requests.close()
    their_ended.close()
    ended.setblocking(False)
    return Spawner(pid, requests, ended)


def _close_all_but(*keep: int) -> None:
    low = 0
    for fd in sorted(keep):
        if fd > low:  # closerange(n, n) would close everything from n on
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, os.sysconf("SC_OPEN_MAX"))


def _serve(requests: socket.socket, ended: socket.socket, seats: dict[int, Seat], ctx: ProxyContext) -> None:
    """Fork a proxy per request, report each proxy's end; return when the zygote closes `requests`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the zygote drains on ^C; then we get EOF
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    wake_read, wake_write = os.pipe()
    for fd in (wake_read, wake_write):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    gc.collect()
    gc.freeze()  # the proxies' collector never walks (and so never copies) what they inherit
    own = [requests.fileno(), ended.fileno(), wake_read, wake_write]
    while True:
        readable, _, _ = select.select([requests.fileno(), wake_read], [], [])
        if wake_read in readable:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_read, 4096)
            _report_ended(ended)
        if requests.fileno() in readable:
            message, fds, _, _ = socket.recv_fds(requests, _REQUEST.size, 2)
            if len(message) != _REQUEST.size or len(fds) != 2:
                for fd in fds:
                    os.close(fd)
                if not message:
                    return  # the zygote is stopping
                continue
            index, init_pid = _REQUEST.unpack(message)
            try:
                pid = _fork_proxy(seats[index], init_pid, fds, own, ctx)
            except OSError as exc:
                log.error("seat %d: could not fork a proxy: %s", index, exc)
                pid = -(exc.errno or 1)
            finally:
                for fd in fds:
                    os.close(fd)
            requests.send(_PID.pack(pid))


def _report_ended(ended: socket.socket) -> None:
    for pid, status in linux.ended_children():
        ended.send(_ENDED.pack(pid, status))


def _fork_proxy(seat: Seat, init_pid: int, fds: list[int], own: list[int], ctx: ProxyContext) -> int:
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            signal.set_wakeup_fd(-1)
            for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
                signal.signal(number, signal.SIG_DFL)
            for fd in own:
                os.close(fd)
            zygote_end, init_end = (socket.socket(fileno=fd) for fd in fds)
            proxy.run_proxy(zygote=zygote_end, init=proxy.InitLink(init_end, init_pid), seat=seat, ctx=ctx,
                            parent=parent)
        finally:
            os._exit(1)  # never back into the spawner's loop
    return pid
