"""The zygote's loop: keep every seat's init and next proxy prepared, hand connections out unread.

Each seat has a long-lived init (PID 1 of the seat's namespaces, forked once)
and, per job, a proxy forked in advance, not by the zygote but by its small proxy
spawner (sandbox/proxies.py), which reports each proxy's end. Seats outnumber slots two to one: at
most `slots` jobs run at once (one per core) while the other seats get ready.
When no job may start the zygote stops accepting, and clients queue in the
listen backlog: that is the back-pressure. The zygote never reads a byte of a
connection or of an init's messages; it only forks and passes descriptors. On the status
socket beside the main one it answers every connection at once with its status (slots, busy,
queued), busy or not, again without reading a byte.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import signal
import socket
import time
from dataclasses import dataclass, field

from sandbox import linux, proxies, proxy, seat_init, warm
from sandbox.context import Seat, ServerContext
from sandbox.network import accept_queue_length
from sandbox.protocol import PROTOCOL_VERSION, send_message

log = logging.getLogger("sandbox")
_DRAIN_SECONDS = 10.0


@dataclass
class SeatState:
    seat: Seat
    init_pid: int | None = None
    init_control: socket.socket | None = None  # our end of the init's line, inherited by each proxy
    proxy_pid: int | None = None
    proxy_control: socket.socket | None = None
    ready: bool = False
    running: bool = False
    finished: bool = False  # its proxy answered the job and is exiting: the slot is free again
    init_doomed: bool = False  # killed for a rebuild, not yet reaped
    failures: int = 0
    not_before: float = 0.0  # back-off after a seat failed to get ready

    def back_off(self) -> None:
        self.failures += 1
        self.not_before = time.monotonic() + min(5.0, 0.1 * 2**self.failures)


@dataclass
class Zygote:
    listener: socket.socket
    ctx: ServerContext
    seats: list[SeatState]
    slots: int
    spawner: proxies.Spawner
    stopping: bool = False
    sibling: int | None = None  # the torch-less server's pid: when it dies, this server stops too
    sibling_lost: bool = False
    spawner_lost: bool = False
    status_listener: socket.socket | None = None
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)
    _wake: tuple[int, int] = (-1, -1)

    def _forked_child(self, keep: list[socket.socket]) -> None:
        """In a new child: drop every descriptor of the zygote's it must not hold."""
        warm.reset_signals_after_fork()
        for state in self.seats:
            for sock in (state.init_control, state.proxy_control):
                if sock is not None and not any(sock is k for k in keep):
                    os.close(sock.detach())
        for fd in self.spawner.fds():
            os.close(fd)
        os.close(self.listener.detach())
        if self.status_listener is not None:
            os.close(self.status_listener.detach())
        self.selector.close()
        for fd in self._wake:
            os.close(fd)

    def start_init(self, state: SeatState) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid_read, pid_write = os.pipe()
        warm.assert_single_threaded()  # a fork of a threaded process can deadlock
        helper = os.fork()
        if helper == 0:
            try:  # an intermediate process: the init must be the first child *after* unshare(PID)
                self._forked_child([theirs])
                os.close(ours.detach())
                os.close(pid_read)
                if self.ctx.root is not None:
                    linux.unshare(linux.CLONE_NEWPID)
                init = os.fork()
                if init == 0:
                    os.close(pid_write)
                    seat_init.run_seat_init(seat=state.seat, ctx=self.ctx, control=theirs)
                os.write(pid_write, str(init).encode())
            finally:
                os._exit(0)  # the init is reparented to us: the zygote is a child subreaper
        theirs.close()
        os.close(pid_write)
        with os.fdopen(pid_read) as pid_file:
            state.init_pid = int(pid_file.read())
        os.waitpid(helper, 0)
        state.init_control = ours

    def start_proxy(self, state: SeatState) -> None:
        assert state.init_control is not None and state.init_pid is not None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:  # not a fork of this process: tearing down a copy of the torch image cost milliseconds per job
            pid = self.spawner.spawn(state.seat, state.init_pid, theirs, state.init_control)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        state.proxy_pid, state.proxy_control = pid, ours
        state.ready = state.running = state.finished = False
        self.selector.register(ours, selectors.EVENT_READ, state)

    def on_proxy_message(self, state: SeatState) -> None:
        assert state.proxy_control is not None
        data = state.proxy_control.recv(16)
        if proxy.READY in data:
            state.ready = True
        if proxy.FINISHED in data:
            state.finished = True
        if not data:
            self._close_proxy_control(state)

    def _close_proxy_control(self, state: SeatState) -> None:
        if state.proxy_control is not None:
            self.selector.unregister(state.proxy_control)
            state.proxy_control.close()
            state.proxy_control, state.ready = None, False

    def _proxy_ended(self, state: SeatState, status: int) -> None:
        self._close_proxy_control(state)
        healthy = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        if healthy:
            state.failures = 0 if state.running else state.failures
        else:
            state.back_off()
            self._doom_init(state)
        state.proxy_pid, state.running = None, False

    def _doom_init(self, state: SeatState) -> None:
        """Rebuild the seat from scratch: its init dies, and its namespaces with it."""
        if state.init_pid is not None:
            with contextlib.suppress(OSError):
                os.kill(state.init_pid, signal.SIGKILL)
            state.init_doomed = True

    def reap_proxies(self) -> None:
        """The proxies are the spawner's children: it reports their ends."""
        for pid, status in self.spawner.ended_proxies():
            for state in self.seats:
                if pid == state.proxy_pid:
                    self._proxy_ended(state, status)

    def reap(self) -> None:
        self.reap_proxies()
        for pid, status in linux.ended_children():
            if pid == self.sibling:
                log.error("the torch-less server exited (status %d); stopping", status)
                self.sibling, self.sibling_lost, self.stopping = None, not self.stopping, True
            if pid == self.spawner.pid and self.spawner.alive:
                self._spawner_ended(status)
            for state in self.seats:
                if pid == state.init_pid:
                    if state.init_control is not None:
                        state.init_control.close()
                    state.init_pid, state.init_control, state.init_doomed = None, None, False

    def _spawner_ended(self, status: int) -> None:
        """Its proxies died with it (PR_SET_PDEATHSIG) and no new one can be forked: stop."""
        self.reap_proxies()  # what it reported before it died
        if not self.stopping:
            log.error("the proxy spawner exited (status %d); stopping", status)
            self.spawner_lost = self.stopping = True
        self.spawner.alive = False
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(self.spawner.ended)
        self.spawner.ended.close()
        for state in self.seats:
            if state.proxy_pid is not None:
                self._proxy_ended(state, signal.SIGKILL)  # the wait status of a process killed by SIGKILL

    def refill(self) -> None:
        now = time.monotonic()
        for state in self.seats:
            if self.stopping or now < state.not_before or state.proxy_pid is not None or state.init_doomed:
                continue
            try:
                if state.init_pid is None:
                    self.start_init(state)
                self.start_proxy(state)
            except OSError:
                log.exception("seat %d: could not be prepared", state.seat.index)
                state.back_off()
                self._doom_init(state)

    def dispatch(self) -> None:
        """Accept one connection and pass it, unread, to a prepared proxy."""
        conn, _ = self.listener.accept()
        with conn:
            state = next(s for s in self.seats if s.ready and not s.running)
            assert state.proxy_control is not None
            socket.send_fds(state.proxy_control, [b"J"], [conn.fileno()])
            state.ready, state.running = False, True

    def status(self) -> dict[str, object]:
        return {"v": PROTOCOL_VERSION, "op": "status", "version": PROTOCOL_VERSION, "backend": self.ctx.backend,
                "torch": self.ctx.torch, "slots": self.slots, "busy": sum(s.running for s in self.seats),
                "queued": accept_queue_length(self.listener), "stopping": self.stopping}

    def answer_status(self) -> None:
        """Write the status to a connection on the status socket, unread, and close it."""
        assert self.status_listener is not None
        with contextlib.suppress(OSError):
            conn, _ = self.status_listener.accept()
            with conn:
                conn.settimeout(0.5)
                send_message(conn, self.status())

    def can_start_job(self) -> bool:
        running = sum(state.running and not state.finished for state in self.seats)
        return running < self.slots and any(s.ready and not s.running for s in self.seats)

    def _refill_due(self) -> bool:
        now = time.monotonic()
        return not self.stopping and any(s.proxy_pid is None and not s.init_doomed and now >= s.not_before
                                         for s in self.seats)

    def _timeout(self) -> float | None:
        waiting = [s.not_before for s in self.seats if s.proxy_pid is None and not s.init_doomed]
        return max(0.0, min(waiting) - time.monotonic()) if waiting else None

    def run(self) -> None:
        self._wake = os.pipe()
        for fd in self._wake:
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(self._wake[1])  # SIGCHLD / SIGTERM wake the selector
        self.selector.register(self._wake[0], selectors.EVENT_READ)
        if self.status_listener is not None:
            self.selector.register(self.status_listener, selectors.EVENT_READ)
        self.selector.register(self.spawner.ended, selectors.EVENT_READ)  # a proxy ended: reaped below
        listening = False
        while not self.stopping:
            self.reap()
            if self.can_start_job() != listening:
                listening = not listening
                if listening:
                    self.selector.register(self.listener, selectors.EVENT_READ)
                else:
                    self.selector.unregister(self.listener)  # back-pressure: clients wait in the backlog
            # A waiting client is handed to a ready seat before any proxy is forked (a fork of this
            # process takes milliseconds): with more clients than slots, that fork was on every job's path.
            for key, _ in self.selector.select(0 if self._refill_due() else self._timeout()):
                if key.fileobj is self.listener and self.can_start_job():
                    self.dispatch()
                elif key.fileobj is self.status_listener:
                    self.answer_status()
                elif key.fd == self._wake[0]:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self._wake[0], 4096)
                elif isinstance(key.data, SeatState) and key.data.proxy_control is not None:
                    self.on_proxy_message(key.data)
            self.refill()
        signal.set_wakeup_fd(-1)

    def drain(self) -> None:
        """Idle proxies go at once, running jobs get a while to finish, then everything is killed."""
        for state in self.seats:
            if not state.running:
                self._close_proxy_control(state)  # EOF: an idle proxy exits
        deadline = time.monotonic() + _DRAIN_SECONDS
        while any(s.running for s in self.seats) and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.02)
        self.reap()  # no stale pid is killed below
        for state in self.seats:
            if state.proxy_pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(state.proxy_pid, signal.SIGKILL)
            if state.init_control is not None:
                state.init_control.close()  # EOF: the init exits, and its namespace with it
                state.init_control = None
        deadline = time.monotonic() + _DRAIN_SECONDS
        while any(s.proxy_pid or s.init_pid for s in self.seats) and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.02)
        for state in self.seats:
            for pid in (state.proxy_pid, state.init_pid):
                if pid is not None:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
        self.spawner.stop()  # EOF: it exits; its proxies, if any are left, die with it
        deadline = time.monotonic() + _DRAIN_SECONDS
        while self.spawner.alive and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.005)
        if self.spawner.alive:
            with contextlib.suppress(OSError):
                os.kill(self.spawner.pid, signal.SIGKILL)
