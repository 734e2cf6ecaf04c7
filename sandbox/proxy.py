"""A seat's proxy: forked per job by the proxy spawner (sandbox/proxies.py), outside the job's namespaces.

Pre-forked: it waits until the seat's init reports ready, tells the zygote,
and receives one connection, unread. It is the only process that reads the
request: it sets the seat's cgroup limits, gives the init the job's
descriptors, writes the job into the student process's pipe, watches the wall
clock and the output caps, and answers with a document built from facts the
job cannot forge. It serves exactly one job and exits.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import socket
import sys
from dataclasses import dataclass, field
from typing import NoReturn

from sandbox import linux
from sandbox.context import ProxyContext, Seat
from sandbox.job_run import answer
from sandbox.supervise import Watch

log = logging.getLogger("sandbox")
READY_TIMEOUT_SECONDS = 60.0
READY = b"R"
FINISHED = b"F"  # the job's processes are gone and its client answered: its slot is free



class InitUnavailable(Exception):
    """The seat's init died or failed to set up; the zygote rebuilds the seat."""


@dataclass
class InitLink:
    """The proxy's line to the seat's init (newline-delimited JSON) and the init's pid.

    `ends` are the waiting student process's job pipe (write end), stdout,
    stderr and result channel (read ends), which come with the "ready" event.
    """

    control: socket.socket
    pid: int
    ends: list[int] = field(default_factory=list)
    token: int = 0  # names the waiting student process in a kill request

    def await_ready(self) -> None:
        """Skip what an earlier proxy left unread until the init reports ready (with descriptors)."""
        watch, received = Watch({}), []
        while (ready := watch.event("ready")) is None:
            readable, _, _ = select.select([self.control], [], [], READY_TIMEOUT_SECONDS)
            if not readable:
                raise InitUnavailable("the seat's init did not get ready in time")
            message, fds, _, _ = socket.recv_fds(self.control, 65536, 4)
            if not message:
                last = watch.events[-1] if watch.events else {}
                raise InitUnavailable(f"the seat's init is gone ({last.get('message', 'no message')})")
            received += fds
            watch.status_line(message)
        if len(received) != 4:
            raise InitUnavailable("the seat's init sent no descriptors")
        self.ends, self.token = received, int(ready.get("token", 0))

    def release(self) -> None:
        """No job came: closing the job pipe makes the waiting student process exit unused."""
        for fd in self.ends:
            os.close(fd)
        self.ends = []

    def _request(self, op: str) -> None:
        self.control.sendall(json.dumps({"op": op, "token": self.token}).encode() + b"\n")

    def ask_to_kill(self) -> None:
        """The init kills every job process with kill(-1) and reports the job over."""
        self._request("kill")

    def done(self) -> None:
        """We read all we wanted: the init may prepare the next student process."""
        with contextlib.suppress(OSError):
            self._request("done")

    def hard_kill(self) -> None:
        """Last resort when the init does not answer: its death ends the whole namespace."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass


def _receive_connection(zygote: socket.socket) -> socket.socket | None:
    try:
        zygote.sendall(READY)
        message, fds, _, _ = socket.recv_fds(zygote, 16, 1)
    except OSError:
        return None  # the zygote closed our socket: it is shutting down
    if not message or not fds:
        return None
    return socket.socket(fileno=fds[0])


def run_proxy(*, zygote: socket.socket, init: InitLink, seat: Seat, ctx: ProxyContext,
              parent: int) -> NoReturn:
    """Body of a proxy process; never returns. Exit status 0 means the seat is reusable."""
    code = 0
    try:
        if sys.platform.startswith("linux"):
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # spawner (and so zygote) gone: proxy gone
        if os.getppid() != parent:
            raise InitUnavailable("the proxy spawner died before the proxy started")
        init.await_ready()
        conn = _receive_connection(zygote)
        served = None
        if conn is not None:
            with conn:
                served = answer(conn, init, seat, ctx)
            with contextlib.suppress(OSError):  # not at our exit: tearing down a forked torch image takes a while
                zygote.sendall(FINISHED)
            log.info("seat %d: %s", seat.index, served.outcome, extra={"seat": seat.index, **served.log_fields})
            code = 0 if served.reusable else 1
        if served is None or not served.ran_job:
            init.release()
        init.done()
    except InitUnavailable as exc:
        log.error("seat %d: %s", seat.index, exc)
        code = 1
    except BaseException:  # a proxy must never fall back into the zygote's loop
        log.exception("seat %d: proxy failed", seat.index)
        code = 1
    finally:
        os._exit(code)
