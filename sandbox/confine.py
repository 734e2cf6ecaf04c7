"""Turn the forked student process into a confined job, in an order that matters.

Runs as root inside the job's namespaces. Descriptors and rlimits first (they
need no privilege), then the uid switch (drops every capability), then
seccomp last: from then on nothing the job does can loosen any of it.
"""

from __future__ import annotations

import fcntl
import math
import os
import random
import resource
import signal
import sys
from dataclasses import dataclass

from sandbox.limits import MIB, Limits
from sandbox.seccomp import SeccompFilter

RESULT_FD = 3
SETUP_STATUS_FD = 4  # open only while confining, to report a set-up failure
JOB_FD = 5  # the job itself (source and input), read once before confinement
_HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)


@dataclass(frozen=True)
class Identity:
    """Who the job runs as. `dedicated` means the uid is ours alone, so RLIMIT_NPROC is safe."""

    uid: int
    gid: int
    switch: bool  # False in the insecure development backend (no root to drop from)
    dedicated: bool


@dataclass(frozen=True)
class JobPipes:
    """Descriptors handed to the student process (all are closed or replaced before job code runs)."""

    stdout: int
    stderr: int
    result: int
    status: int
    job: int


def wire_descriptors(pipes: JobPipes) -> None:
    """0=/dev/null, 1=stdout, 2=stderr, 3=result, 4=set-up status, 5=job; nothing else survives.
    Also a new session (no controlling terminal; a process group the dev backend can kill)."""
    os.setsid()
    reset_signals()
    devnull = os.open("/dev/null", os.O_RDONLY)
    sources = (devnull, pipes.stdout, pipes.stderr, pipes.result, pipes.status, pipes.job)
    # Park every source above the targets first so a dup2 never clobbers another source.
    parked = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in sources]
    for target, fd in enumerate(parked):
        os.dup2(fd, target, inheritable=target < SETUP_STATUS_FD)
    os.closerange(JOB_FD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    sys.stdin = open(0, encoding="utf-8", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)


def reset_signals() -> None:
    for number in _HANDLED_SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.set_wakeup_fd(-1)


def set_rlimits(limits: Limits, data_base: int, dedicated_uid: bool) -> None:
    """`data_base` is the inherited torch heap: RLIMIT_DATA counts it, so add the budget on top."""
    cpu = max(1, math.ceil(limits.cpu_seconds))
    settings = {
        resource.RLIMIT_CPU: (cpu, cpu + 1),  # SIGXCPU first, SIGKILL a second later
        resource.RLIMIT_DATA: (data_base + limits.memory_mb * MIB,) * 2,
        resource.RLIMIT_FSIZE: (limits.file_mb * MIB,) * 2,
        resource.RLIMIT_NOFILE: (limits.open_files,) * 2,
        resource.RLIMIT_CORE: (0, 0),
        resource.RLIMIT_MEMLOCK: (0, 0),
    }
    if hasattr(resource, "RLIMIT_MSGQUEUE"):
        settings[resource.RLIMIT_MSGQUEUE] = (0, 0)
    if dedicated_uid:
        # Counted per real uid: only meaningful when the uid belongs to this job alone.
        settings[resource.RLIMIT_NPROC] = (limits.processes,) * 2
    for which, value in settings.items():
        resource.setrlimit(which, value)


def drop_privileges(identity: Identity) -> None:
    os.setgroups([])
    os.setresgid(identity.gid, identity.gid, identity.gid)
    os.setresuid(identity.uid, identity.uid, identity.uid)
    if os.getresuid() != (identity.uid,) * 3 or os.getresgid() != (identity.gid,) * 3:
        raise OSError("failed to drop privileges")


def prefer_as_oom_victim() -> None:
    # Raising the score needs no privilege; the kernel then kills the job, not its init.
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("1000")
    except OSError:
        pass


def reseed_random() -> None:
    """Forked jobs share the zygote's RNG state; give each what a fresh interpreter has."""
    random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.default_generator.seed()  # not torch.seed(): that also wakes CUDA/MPS (~2 ms)
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()


def lock_down(*, limits: Limits, identity: Identity, data_base: int, seccomp: SeccompFilter | None) -> None:
    """Confine the calling process (after `wire_descriptors`); then it may run untrusted code."""
    prefer_as_oom_victim()
    set_rlimits(limits, data_base, identity.dedicated)
    if identity.switch:
        drop_privileges(identity)
    if seccomp is not None:
        seccomp.load()
    reseed_random()
    os.close(SETUP_STATUS_FD)  # the job must not be able to speak for its init
