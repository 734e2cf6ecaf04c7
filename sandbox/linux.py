"""Thin ctypes bindings for the Linux calls Python 3.11 does not expose.

Only what the jail needs: namespaces, mounts, pivot_root, prctl. Every call
raises OSError with the real errno so set-up failures are explicit.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
from collections.abc import Iterator
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MNT_DETACH = 0x2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

# pivot_root has no glibc wrapper; numbers per architecture.
_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_SIGNATURES = {
    "mount": [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p],
    "umount2": [ctypes.c_char_p, ctypes.c_int],
    "unshare": [ctypes.c_int],
    "setns": [ctypes.c_int, ctypes.c_int],
    "sethostname": [ctypes.c_char_p, ctypes.c_size_t],
    "prctl": [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong],
}


def _fn(name: str) -> Any:
    """Look a libc function up on first use, so importing this module works on any OS."""
    function = getattr(_libc, name)
    if name in _SIGNATURES:
        function.argtypes = _SIGNATURES[name]
    function.restype = ctypes.c_long if name == "syscall" else ctypes.c_int
    return function


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _bytes(value: str | None) -> bytes | None:
    return None if value is None else os.fsencode(value)


def unshare(flags: int) -> None:
    _check(_fn("unshare")(flags), "unshare")


def setns(fd: int, nstype: int) -> None:
    _check(_fn("setns")(fd, nstype), "setns")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    result = _fn("mount")(_bytes(source), _bytes(target), _bytes(fstype), flags, _bytes(data))
    _check(result, f"mount {target}")


def umount(target: str, flags: int = MNT_DETACH) -> None:
    _check(_fn("umount2")(_bytes(target), flags), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    number = _PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(f"pivot_root: unsupported architecture {platform.machine()}")
    new, old = _bytes(new_root), _bytes(put_old)
    _check(_fn("syscall")(ctypes.c_long(number), ctypes.c_char_p(new), ctypes.c_char_p(old)), "pivot_root")


def sethostname(name: str) -> None:
    raw = name.encode()
    _check(_fn("sethostname")(raw, len(raw)), "sethostname")


def prctl(option: int, arg: int = 0, arg3: int = 0) -> None:
    _check(_fn("prctl")(option, arg, arg3, 0, 0), f"prctl({option})")


def ended_children() -> Iterator[tuple[int, int]]:
    """(pid, wait status) of each child that has ended, reaped without blocking, until none is left."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, status
