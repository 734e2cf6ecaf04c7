"""PID 1 of each job's PID namespace: a 160-byte program, not a copy of the zygote.

A PID namespace needs a first process: while it lives, the seat's init can fork into the namespace
(the student process is its second process, pid 2), orphans are reparented to it, and when it dies
the kernel kills every other process of the namespace. It needs no Python for that. Forked from the
seat's init it was a full copy of the warm torch image, made and torn down per job only to wait;
this program is spawned with `posix_spawn` (vfork and exec: no copy of the image at all) from a
memfd the seat's init fills once. It ignores SIGCHLD (so the kernel reaps orphans at once) and
sleeps in pause() until it is killed: it holds no descriptor, reads nothing, and runs as root,
invisible to the job (`hidepid=invisible`) and out of its reach (another uid; PID 1 ignores what
its namespace sends it).

Machine code is given for x86_64 only; elsewhere (or when the kernel refuses to execute a memfd)
`load` answers -1 and the seat's init forks a Python job init instead (seat_init.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import platform
import struct

_BASE = 0x400000
_CODE = {
    "x86_64": bytes.fromhex(
        "6a00" "6a00" "6a00" "6a01"  # push 0 (mask), 0 (restorer), 0 (flags), 1 (SIG_IGN): a struct sigaction
        "4889e6"  # mov rsi, rsp            new action
        "31d2"  # xor edx, edx              no old action
        "41ba08000000"  # mov r10d, 8       sizeof(sigset_t)
        "bf11000000"  # mov edi, 17         SIGCHLD
        "b80d000000"  # mov eax, 13         rt_sigaction
        "0f05"  # syscall
        "b822000000"  # loop: mov eax, 34   pause
        "0f05"  # syscall
        "ebf7"  # jmp loop
    ),
}
_MACHINE = {"x86_64": 0x3E}


def image(machine: str | None = None) -> bytes | None:
    """The program as a static ELF executable (one segment, read+execute), or None on other machines."""
    machine = machine or platform.machine()
    code = _CODE.get(machine)
    if code is None:
        return None
    header_size, segment_size = 64, 56
    size = header_size + segment_size + len(code)
    header = struct.pack("<4sBBBBB7sHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0, bytes(7),
                         2, _MACHINE[machine], 1, _BASE + header_size + segment_size, header_size, 0, 0,
                         header_size, segment_size, 1, 0, 0, 0)
    segment = struct.pack("<IIQQQQQQ", 1, 5, 0, _BASE, _BASE, size, size, 0x1000)  # PT_LOAD, R+X
    return header + segment + code


def load() -> int:
    """A sealed memfd holding the program (close-on-exec), or -1 when this machine has none."""
    program = image()
    if program is None or not hasattr(os, "memfd_create"):
        return -1
    try:  # refused by some kernels (vm.memfd_noexec=2 before Linux 6.6) and container filters
        fd = os.memfd_create("job-init", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except OSError:
        return -1
    try:
        os.write(fd, program)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW
                    | fcntl.F_SEAL_WRITE)
    except OSError:
        os.close(fd)
        return -1
    return fd


def spawn(fd: int) -> int:
    """Start the program (after unshare(CLONE_NEWPID): as PID 1 of the new namespace); return its pid.
    It inherits no descriptor: every one this process would pass on (stdin, stdout, stderr and any
    other not marked close-on-exec) is closed in the child before the program runs."""
    closes = [(os.POSIX_SPAWN_CLOSE, target) for target in _inheritable()]
    return os.posix_spawn(f"/proc/self/fd/{fd}", ["job-init"], {}, file_actions=closes)


def _inheritable() -> list[int]:
    found = []
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor, closed by now
            if os.get_inheritable(int(name)):
                found.append(int(name))
    return found
