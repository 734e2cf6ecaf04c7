"""The job's PID 1 is a tiny static program (sandbox/job_init.py): it must be a well-formed executable,
ignore SIGCHLD (so the kernel reaps a job's orphans at once), sleep until it is killed, and hold no
descriptor. Checked by running it as an ordinary child here."""

from __future__ import annotations

import os
import signal
import struct
import time

import pytest

from sandbox import job_init

pytestmark = pytest.mark.skipif(job_init.image() is None, reason="no machine code for this architecture")


def _status_field(pid: int, name: str) -> str:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(name + ":"):
                return line.split()[1]
    raise AssertionError(f"{name} not in /proc/{pid}/status")


def test_the_program_is_a_static_elf_executable_with_one_read_execute_segment() -> None:
    program = job_init.image()
    assert program is not None
    assert program[:4] == b"\x7fELF" and program[4] == 2 and program[5] == 1  # 64-bit, little-endian
    kind, machine, _, entry, program_headers = struct.unpack_from("<HHIQQ", program, 16)
    assert kind == 2 and machine == 0x3E  # ET_EXEC, x86_64
    segment_type, flags, offset, address, _, file_size, memory_size, _ = struct.unpack_from(
        "<IIQQQQQQ", program, program_headers)
    assert (segment_type, flags, offset) == (1, 5, 0)  # PT_LOAD, R+X (never writable), the whole file
    assert file_size == memory_size == len(program) and address <= entry < address + len(program)


def test_it_ignores_sigchld_sleeps_holds_no_descriptor_and_dies_when_killed() -> None:
    fd = job_init.load()
    if fd < 0:
        pytest.skip("this kernel refuses to execute a memfd (vm.memfd_noexec): the Python init is used")
    try:
        pid = job_init.spawn(fd)
    except PermissionError as exc:  # vm.memfd_noexec=2 on Linux 6.6+: the memfd is made, not executed
        pytest.skip(f"this kernel refuses to execute a memfd: {exc}")
    finally:
        os.close(fd)
    try:
        time.sleep(0.2)
        assert _status_field(pid, "State") == "S"  # asleep in pause(), not spinning, not exited
        assert int(_status_field(pid, "SigIgn"), 16) & (1 << (signal.SIGCHLD - 1))
        assert os.listdir(f"/proc/{pid}/fd") == []  # not even stdin, stdout or stderr
        os.kill(pid, signal.SIGCHLD)  # ignored: it keeps sleeping
        time.sleep(0.1)
        assert _status_field(pid, "State") == "S"
    finally:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def test_a_kernel_refusing_the_memfd_itself_means_the_python_init(monkeypatch: pytest.MonkeyPatch) -> None:
    """vm.memfd_noexec=2 before Linux 6.6, or a container's filter, refuses memfd_create itself: the
    seat's init must fall back to the forked Python init, not fail at start (and every seat with it)."""

    def refused(name: str, flags: int = 0) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "memfd_create", refused)
    assert job_init.load() == -1
