"""A seccomp deny-list built with libseccomp (Debian: libseccomp2) via ctypes.

Default action is ALLOW: the job is ordinary Python/torch code and an
allow-list would break on every new glibc or torch release. What is denied is
what turns a contained process into an escape or a host-wide nuisance: new
namespaces, tracing other processes, mounting, kernel extension points, and
sockets other than AF_UNIX. Denials return EPERM so the student sees a clean
Python exception instead of a dead process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import socket
from dataclasses import dataclass

from sandbox import linux

_ACT_ALLOW = 0x7FFF0000
_CMP_NE = 1
_CMP_MASKED_EQ = 7
_TIOCSTI = 0x5412
_TIOCLINUX = 0x541C
_NAMESPACE_FLAGS = (
    linux.CLONE_NEWNS, linux.CLONE_NEWCGROUP, linux.CLONE_NEWUTS, linux.CLONE_NEWIPC,
    linux.CLONE_NEWUSER, linux.CLONE_NEWPID, linux.CLONE_NEWNET,
)

DENIED_SYSCALLS = (
    # namespaces and process inspection
    "unshare", "setns", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
    "pidfd_getfd", "process_madvise",
    # filesystems and mounts
    "mount", "umount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "name_to_handle_at",
    "open_by_handle_at", "quotactl", "swapon", "swapoff", "acct",
    # kernel extension points and attack surface
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key", "init_module",
    "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "lookup_dcookie", "fanotify_init", "syslog", "vhangup",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    # rarely needed, historically exploitable, or a window on other processes and files
    "modify_ldt", "memfd_secret", "pidfd_open", "personality", "sysinfo",
    "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
)


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


def _load_library() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    lib = ctypes.CDLL(name, use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    return lib


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


@dataclass(frozen=True)
class SeccompFilter:
    """The compiled BPF program; `load()` applies it to the calling process (and its children)."""

    program: bytes

    def load(self) -> None:
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)  # required, and setuid binaries cannot undo it
        buffer = ctypes.create_string_buffer(self.program, len(self.program))
        fprog = _SockFprog(len(self.program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
        linux.prctl(linux.PR_SET_SECCOMP, linux.SECCOMP_MODE_FILTER, ctypes.addressof(fprog))


@dataclass
class _Builder:
    lib: ctypes.CDLL
    ctx: int

    def rule(self, action: int, name: str, *conditions: tuple[int, int, int, int]) -> None:
        number = self.lib.seccomp_syscall_resolve_name(name.encode())
        if number < 0:
            return  # unknown to this libseccomp/arch: nothing to deny
        array = (_ArgCmp * max(1, len(conditions)))(*[_ArgCmp(*c) for c in conditions])
        result = self.lib.seccomp_rule_add_array(ctypes.c_void_p(self.ctx), action, number, len(conditions), array)
        if result != 0:
            raise OSError(-result, f"seccomp rule for {name} failed")

    def export(self) -> bytes:
        """Compile once, in the zygote: each job then only hands the kernel these bytes."""
        read, write = os.pipe()
        try:
            result = self.lib.seccomp_export_bpf(ctypes.c_void_p(self.ctx), write)
            os.close(write)
            if result != 0:
                raise OSError(-result, "seccomp_export_bpf failed")
            chunks = []
            while chunk := os.read(read, 65536):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(read)
            self.lib.seccomp_release(ctypes.c_void_p(self.ctx))


def build_filter() -> SeccompFilter:
    """Build the deny-list once (in the zygote); each job only calls `load()`."""
    lib = _load_library()
    ctx = lib.seccomp_init(_ACT_ALLOW)
    if not ctx:
        raise OSError("seccomp_init failed")
    flt = _Builder(lib, ctx)
    deny = _errno_action(errno.EPERM)
    for name in DENIED_SYSCALLS:
        flt.rule(deny, name)
    # clone3 passes flags in memory the filter cannot read: make glibc fall
    # back to clone(), whose flags the rules below can inspect.
    flt.rule(_errno_action(errno.ENOSYS), "clone3")
    for flag in _NAMESPACE_FLAGS:
        flt.rule(deny, "clone", (0, _CMP_MASKED_EQ, flag, flag))
    # The kernel reads the domain as a 32-bit int; anything but AF_UNIX goes.
    for name in ("socket", "socketpair"):
        flt.rule(_errno_action(errno.EAFNOSUPPORT), name, (0, _CMP_NE, socket.AF_UNIX, 0))
    for request in (_TIOCSTI, _TIOCLINUX):
        flt.rule(deny, "ioctl", (1, _CMP_MASKED_EQ, 0xFFFFFFFF, request))
    return SeccompFilter(flt.export())
