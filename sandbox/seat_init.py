"""A seat's init: PID 1 of the seat's PID namespace, long-lived, never sees a job's code.

Forked once per seat from the pristine zygote, it joins the seat's cgroups,
enters fresh namespaces and pivots into the private root (the slow part, done
once). Then, per job: it forks the next student process in advance and hands
the proxy the other ends of that process's pipes; the student process reads
its job itself. When that process ends (or the proxy asks), the init kills
every other process of the namespace with kill(-1), reaps them all, and gives
the next job a fresh IPC namespace and a fresh tmpfs. It never receives a
job, so its memory (which every student process inherits) stays the zygote's.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from sandbox import jail, job_init, linux, neutral
from sandbox.confine import JobPipes
from sandbox.context import Seat, ServerContext
from sandbox.student import run_student

log = logging.getLogger("sandbox")
_MESSAGE_BYTES = 65536
REAP_SECONDS = 5.0  # SIGKILLed processes are gone within milliseconds unless stuck in the kernel


def send(control: socket.socket, **event: Any) -> None:
    with contextlib.suppress(OSError):  # the proxy is gone: nothing left to tell
        control.sendall(json.dumps(event).encode() + b"\n")


def _setup(seat: Seat, ctx: ServerContext, work_dir: str | None) -> int:
    """Enter the seat; return a descriptor of the seat's PID namespace (-1 without namespaces)."""
    if seat.cgroup is not None:
        seat.cgroup.join_self()
    with contextlib.suppress(OSError):  # needs CAP_SYS_RESOURCE; the job gets +1000 anyway
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("-1000")
    if ctx.root is not None:
        neutral.blank_command_line()
        jail.enter(ctx.root)
        neutral.rename_loaded(ctx.host_names)
        return os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    os.chdir(work_dir or "/")
    if sys.platform.startswith("linux"):
        linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)  # no PID namespace: orphans come to us
    return -1


def _reset(seat: Seat, ctx: ServerContext, work_dir: str | None, seat_proc: int) -> None:
    """Between jobs: nothing of the last job may reach the next one."""
    if ctx.root is not None:
        jail.drop_job_proc(seat_proc)
        linux.unshare(linux.CLONE_NEWIPC)  # SysV IPC objects outlive their processes
        jail.fresh_job_fs(seat.identity.uid, seat.identity.gid, ctx.root.held)
    elif work_dir is not None:
        for entry in os.listdir(work_dir):
            path = os.path.join(work_dir, entry)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)


def _kill_everything(hardened: bool, student: int) -> None:
    if hardened:
        with contextlib.suppress(ProcessLookupError):  # ESRCH: nobody left to kill
            os.kill(-1, signal.SIGKILL)  # from PID 1: every other process of the namespace
    else:
        with contextlib.suppress(OSError):
            os.killpg(student, signal.SIGKILL)  # development backend: the job's process group


def _reap(*, until_none_left: float = 0.0) -> list[tuple[int, int, float]]:
    """(pid, status, cpu seconds) of every child that has ended; with `until_none_left`,
    keep waiting up to that many seconds for the rest (they have all been sent SIGKILL)."""
    ended: list[tuple[int, int, float]] = []
    deadline = time.monotonic() + until_none_left
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid:
            ended.append((pid, status, usage.ru_utime + usage.ru_stime))
        elif time.monotonic() < deadline:
            time.sleep(0.002)
        else:
            return ended


@dataclass
class _ProxyLine:
    """What the seat's current proxy asks: newline-delimited JSON requests, each naming
    the student process it is for, so a late request never reaches the next one."""

    control: socket.socket
    student: int = 0
    kill_requested: bool = False
    proxy_done: bool = False
    _pending: bytearray = field(default_factory=bytearray)

    def serve(self, student: int) -> None:
        self.student, self.kill_requested, self.proxy_done = student, False, False

    def read(self) -> bool:
        """Take in what arrived; False at EOF (the server is gone)."""
        chunk = self.control.recv(_MESSAGE_BYTES)
        *lines, rest = (self._pending + chunk).split(b"\n")
        self._pending = bytearray(rest[:_MESSAGE_BYTES])
        for line in lines:
            with contextlib.suppress(ValueError):
                request = json.loads(line)
                if isinstance(request, dict) and request.get("token") == self.student:
                    self.kill_requested |= request.get("op") == "kill"
                    self.proxy_done |= request.get("op") == "done"
        return bool(chunk)

    def await_proxy_done(self) -> bool:
        """The next "ready" must not reach this proxy: wait until it has read all it wants."""
        while not self.proxy_done:
            if not self.read():
                return False
        return True


def _job_init(student_body: Callable[[], NoReturn], report: int) -> NoReturn:
    """PID 1 of the job's own PID namespace (root, invisible to the job): its own /proc, then the
    student process (pid 2), whose wait status and CPU time it reports to the seat's init. When it
    exits, the kernel kills whatever the job left in the namespace."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        jail.job_proc()
        student = os.fork()
        if student == 0:
            os.close(report)
            student_body()
        os.closerange(0, report)
        os.closerange(report + 1, 1 << 16)
        _, status, usage = os.wait4(student, 0)
        os.write(report, f"{status} {usage.ru_utime + usage.ru_stime}".encode())
    finally:
        os._exit(0)


def _job_report(report: int) -> tuple[int, float] | None:
    """What the job's init reported of the student process (wait status, CPU seconds); None when it
    died without a word (killed), and its own end is then the job's."""
    words = os.read(report, 64).split()  # one small write: atomic
    return (int(words[0]), float(words[1])) if len(words) == 2 else None


def _watch_student(student: int, line: _ProxyLine, wake: int, hardened: bool,
                   report: int = -1) -> tuple[int, float] | None:
    """Until the student process ends (or, with a job init, until that reports its end: not its own
    exit, which unmaps a copy of the zygote's image); a "kill" from the proxy (or its absence) ends
    it sooner."""
    watched = [line.control.fileno(), wake, *([report] if report >= 0 else [])]
    while True:
        readable, _, _ = select.select(watched, [], [])
        if report in readable:
            reported = _job_report(report)
            if reported is not None:
                return reported
            watched.remove(report)  # the job's init died first: its own end is the job's
        if wake in readable:
            with contextlib.suppress(BlockingIOError):
                os.read(wake, 4096)
            for pid, status, cpu in _reap():
                if pid == student:
                    return status, cpu
        if line.control.fileno() in readable:
            alive = line.read()
            if not alive or line.kill_requested:
                _kill_everything(hardened, student)
            if not alive:
                return None  # the server is gone


_EXEC_REFUSED = (errno.EACCES, errno.EPERM, errno.ENOEXEC)  # what a kernel that will not run the memfd says


@dataclass
class _JobInits:
    """How each job's PID namespace gets its PID 1: the small program of `job_init` (`image` is its
    memfd), or, where that is unavailable (-1), a fork of this process (`_job_init`)."""

    image: int = -1

    def new_namespace(self, pid_namespace: int) -> bool:
        """A new PID namespace for the next child; True when its PID 1 is already there (the small
        program), False when the next child must be it."""
        linux.setns(pid_namespace, linux.CLONE_NEWPID)  # the seat's again: the last job's is gone
        linux.unshare(linux.CLONE_NEWPID)  # the next child is PID 1 of a namespace of its own
        if self.image < 0:
            return False
        try:
            job_init.spawn(self.image)
            return True
        except OSError as exc:  # e.g. vm.memfd_noexec=2: that namespace died with the attempt
            if exc.errno not in _EXEC_REFUSED:  # EAGAIN, ENOMEM...: no reason to give the program up for good
                raise
            log.warning("the small job init cannot run (%s); forking a Python one per job instead", exc)
            os.close(self.image)
            self.image = -1
            return self.new_namespace(pid_namespace)


def _prepare_student(seat: Seat, ctx: ServerContext, control: socket.socket,
                     pid_namespace: int, inits: _JobInits) -> tuple[int, int, int]:
    """Fork the next student process, which waits for its job; give the proxy the other ends.
    With namespaces the student is process 2 of a new PID namespace: the seat's init forks it right
    after the namespace's PID 1 (`job_init`), or, where that program cannot run, the fork is the
    job's init (see `_job_init`), which forks the student and reports on it."""
    ends = {name: os.pipe() for name in ("job", "stdout", "stderr", "result", "status")}
    writers = {name: ends[name][1] for name in ("stdout", "stderr", "result", "status")}
    pipes = JobPipes(job=ends["job"][0], **writers)
    small_init = pid_namespace >= 0 and inits.new_namespace(pid_namespace)
    forked_init = pid_namespace >= 0 and not small_init
    report_read, report_write = os.pipe() if forked_init else (-1, -1)

    def student_body() -> NoReturn:
        for name, (read, write) in ends.items():
            os.close(write if name == "job" else read)
        if inits.image >= 0:
            os.close(inits.image)
        run_student(pipes=pipes, seat=seat, ctx=ctx, own_proc=small_init)

    student = os.fork()
    if student == 0:
        if forked_init:
            os.close(report_read)
            _job_init(student_body, report_write)
        student_body()
    if forked_init:
        os.close(report_write)
    for name, (read, write) in ends.items():
        os.close(read if name == "job" else write)
    proxy_ends = [ends["job"][1], *(ends[name][0] for name in ("stdout", "stderr", "result"))]
    ready = {"event": "ready", "token": student}
    socket.send_fds(control, [json.dumps(ready).encode() + b"\n"], proxy_ends)
    for fd in proxy_ends:
        os.close(fd)
    return student, ends["status"][0], report_read


def _serve_one(seat: Seat, ctx: ServerContext, line: _ProxyLine, wake: int, pid_namespace: int,
               inits: _JobInits) -> bool:
    """One student process from fork to reaping; False when the server has gone away."""
    hardened = ctx.root is not None
    student, setup_read, report = _prepare_student(seat, ctx, line.control, pid_namespace, inits)
    line.serve(student)
    outcome = _watch_student(student, line, wake, hardened, report)
    _kill_everything(hardened, student)  # what the job left, and its init: SIGKILL runs no more of their code
    if not hardened:
        for pid, status, cpu in _reap(until_none_left=REAP_SECONDS):
            if pid == student:
                outcome = (status, cpu)
    with os.fdopen(setup_read, "rb") as setup:
        failure = setup.read(4096).decode(errors="replace")
    if outcome is not None and failure:
        send(line.control, event="failure", message=failure)
    elif outcome is not None:
        send(line.control, event="exited", status=outcome[0], cpu=outcome[1])
    if report >= 0:
        os.close(report)
    if hardened:  # the job's init is gone only when every process of its namespace is
        _reap(until_none_left=REAP_SECONDS)  # every process of the job is gone before the next one
    return outcome is not None and line.await_proxy_done()


def run_seat_init(*, seat: Seat, ctx: ServerContext, control: socket.socket) -> NoReturn:
    """Body of the init; never returns. Exits when the server side of `control` closes."""
    work_dir = None if ctx.root is not None else tempfile.mkdtemp(prefix="sandbox-dev-seat-")
    wake_read, wake_write = os.pipe()
    for fd in (wake_read, wake_write):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_write)  # SIGCHLD wakes the select loop
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    os.environ.clear()
    os.environ.update(ctx.job_env)  # what every student process inherits
    if work_dir is not None:
        os.environ.update(HOME=work_dir, TMPDIR=work_dir)
    try:
        pid_namespace = _setup(seat, ctx, work_dir)
        seat_proc = os.stat("/proc").st_dev if pid_namespace >= 0 else -1
        inits = _JobInits(job_init.load() if pid_namespace >= 0 else -1)
        line = _ProxyLine(control)
        while True:
            _reset(seat, ctx, work_dir, seat_proc)
            if not _serve_one(seat, ctx, line, wake_read, pid_namespace, inits):
                break
    except BaseException as exc:  # reported as an infrastructure failure
        send(control, event="failure", message=f"seat init: {exc!r}")
        os._exit(1)
    finally:
        if work_dir is not None:
            shutil.rmtree(work_dir, ignore_errors=True)
    os._exit(0)
