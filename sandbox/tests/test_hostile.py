"""The hostile battery: each program is contained, graded as a clean verdict with a clear
message, the server survives and later jobs are unaffected (the `contained` fixture)."""

from __future__ import annotations

import errno
import os
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from sandbox import Limits, run_job
from sandbox.backends import JAIL_VENV
from sandbox.protocol import JobRequest, send_message
from sandbox.tests.conftest import Server

QUICK = {"wall_seconds": 2.0, "cpu_seconds": 1.0, "memory_mb": 256}


def test_it_stops_a_fork_bomb(contained: Server) -> None:
    result = contained.run("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
                           **QUICK)
    assert result.status == "timeout"
    assert result.error == "Time limit of 2 s exceeded"


def test_it_stops_an_infinite_loop_on_cpu_time(contained: Server) -> None:
    result = contained.run("while True:\n    pass\n", wall_seconds=5, cpu_seconds=1)
    assert result.status == "timeout"
    assert result.error == "CPU time limit of 1 s exceeded"


def test_it_stops_a_program_sleeping_forever(contained: Server) -> None:
    result = contained.run("import time\ntime.sleep(10**6)\n", wall_seconds=1)
    assert result.status == "timeout"
    assert result.error == "Time limit of 1 s exceeded"
    assert 1000 <= result.timings["run_ms"] < 3000


def test_it_refuses_a_50_gb_tensor(contained: Server) -> None:
    result = contained.run("import torch\nx = torch.empty(50 * 10**9, dtype=torch.uint8)\nx.fill_(1)\n", **QUICK)
    assert result.status == "memory"
    assert result.error is not None and result.error.startswith("Memory limit of 256 MiB exceeded")


def test_it_stops_growing_memory(contained: Server) -> None:
    result = contained.run("blocks = []\nwhile True:\n    blocks.append(bytearray(16 * 2**20))\n", **QUICK)
    assert result.status == "memory"
    assert result.error is not None and "Memory limit of 256 MiB exceeded" in result.error


def test_the_cgroup_limits_memory_spread_over_processes(contained: Server) -> None:
    # Each child stays under RLIMIT_DATA; only the cgroup sees the total.
    source = (
        "import os, time\n"
        "for _ in range(4):\n"
        "    if os.fork() == 0:\n"
        "        block = b\"x\" * (150 * 2**20)  # written, so really resident\n"
        "        time.sleep(30)\n"
        "time.sleep(30)\n"
    )
    result = contained.run(source, wall_seconds=10, cpu_seconds=5, memory_mb=256)
    assert result.status == "memory"
    assert result.error == "Memory limit of 256 MiB exceeded"


@pytest.mark.parametrize("directory", ["/job", "/dev/shm", "/tmp"])
def test_it_stops_a_10_gb_file(contained: Server, directory: str) -> None:
    source = (f"with open('{directory}/big', 'wb') as f:\n"
              "    for _ in range(10 * 1024):\n        f.write(bytes(2**20))\n")
    result = contained.run(source, **QUICK)
    assert result.status == "error"
    assert result.error is not None
    assert "File too large" in result.error or "No space left on device" in result.error


def test_it_stops_many_small_files(contained: Server) -> None:
    result = contained.run("for i in range(10**6):\n    open(f'f{i}', 'w').close()\n", **QUICK)
    assert result.status == "error"
    assert result.error is not None and "No space left on device" in result.error


@pytest.mark.parametrize("port", [6379, 5432], ids=["redis", "postgresql"])
def test_it_cannot_reach_local_services(contained: Server, port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=2):
        pass  # the service really listens on this host
    result = contained.run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)\n")
    assert result.status == "error"
    assert result.error is not None and "Address family not supported" in result.error


def test_it_cannot_read_etc_shadow(contained: Server) -> None:
    result = contained.run("print(open('/etc/shadow').read())\n")
    assert result.status == "error"
    assert result.error is not None and result.error.startswith("FileNotFoundError")


def test_it_cannot_write_outside_the_job_dir(contained: Server) -> None:
    venv_file = f"{JAIL_VENV}/x"  # the venv is visible read-only, at its neutral path
    source = (
        "import sandbox_guest\nfailures = {}\n"
        f"for path in ['/x', '/usr/lib/x', {venv_file!r}, '/proc/x', '/job/ok', '/tmp/ok']:\n"
        "    try:\n        open(path, 'w').close()\n"
        "    except OSError as exc:\n        failures[path] = exc.strerror\n"
        "sandbox_guest.emit(failures)\n"
    )
    result = contained.run(source)
    assert result.status == "ok"
    assert set(result.result) == {"/x", "/usr/lib/x", venv_file, "/proc/x"}
    assert result.result[venv_file] == "Read-only file system"


def test_setuid_zero_is_refused(contained: Server) -> None:
    result = contained.run("import os\nos.setuid(0)\n")
    assert result.status == "error"
    assert result.error is not None and result.error.startswith("PermissionError: [Errno 1]")


@pytest.mark.parametrize("call", [
    "libc.unshare(0x10000000)",  # CLONE_NEWUSER
    "libc.unshare(0x20000000)",  # CLONE_NEWPID
    "libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)",  # clone(CLONE_NEWUSER | SIGCHLD)
    "libc.ptrace(16, 1, 0, 0)",  # PTRACE_ATTACH to the init
    "libc.ptrace(0, 0, 0, 0)",  # PTRACE_TRACEME
    "libc.syscall(321, 0, 0, 0)",  # bpf
    "libc.syscall(298, 0, 0, -1, -1, 0)",  # perf_event_open
    "libc.syscall(323, 0)",  # userfaultfd
    "libc.syscall(425, 8, 0)",  # io_uring_setup
    "libc.syscall(250, 0, 0, 0, 0, 0)",  # keyctl
    "libc.syscall(165, 0, 0, 0, 0, 0)",  # mount
    "libc.ioctl(0, 0x5412, ctypes.c_char_p(b'x'))",  # TIOCSTI
    "libc.syscall(154, 0, 0, 0)",  # modify_ldt
    "libc.syscall(447, 0)",  # memfd_secret
    "libc.syscall(434, 1, 0)",  # pidfd_open of the init
    "libc.inotify_init()",
    "libc.inotify_init1(0)",
    "libc.syscall(254, 0, ctypes.c_char_p(b'/'), 0xfff)",  # inotify_add_watch
    "libc.personality(0x0040000)",  # ADDR_NO_RANDOMIZE
])
def test_seccomp_denies_escape_syscalls(contained: Server, call: str) -> None:
    source = (
        "import ctypes, os, sandbox_guest\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        f"rc = {call}\nsandbox_guest.emit([rc, ctypes.get_errno()])\n"
        "if rc == 0:\n    os._exit(0)  # a successful clone child must not emit twice\n"
    )
    result = contained.run(source)
    assert result.status == "ok"
    assert result.result == [-1, 1]  # EPERM


def test_kill_minus_one_only_reaches_the_job_itself(contained: Server) -> None:
    neighbour: dict[str, object] = {}
    sleeper = threading.Thread(target=lambda: neighbour.update(
        result=contained.run("import time, sandbox_guest\ntime.sleep(1.5)\nsandbox_guest.emit('alive')\n")))
    sleeper.start()
    result = contained.run("import os, signal, time\ntime.sleep(0.3)\ntry:\n    os.kill(-1, signal.SIGKILL)\n"
                           "except ProcessLookupError:\n    pass\nprint('still here')\n")
    sleeper.join()
    assert (result.status, result.stdout) == ("ok", "still here\n")
    assert neighbour["result"].status == "ok" and neighbour["result"].result == "alive"  # type: ignore[attr-defined]


def test_it_cannot_kill_its_parent(contained: Server) -> None:
    """Its parent is the seat's init, outside its PID namespace (getppid() is 0: no pid names it), or,
    where the small job init cannot run, the job's init (pid 1); pid 1 is out of reach either way."""
    source = (
        "import os, sandbox_guest\nerrors = []\n"
        "for pid in sorted({os.getppid(), 1} - {0}):\n"
        "    try:\n        os.kill(pid, 9)\n    except OSError as exc:\n        errors.append(exc.errno)\n"
        "sandbox_guest.emit([os.getppid(), errors])\n"
    )
    result = contained.run(source)
    assert result.status == "ok"
    assert result.result == [0 if contained.small_job_init() else 1, [1]]  # EPERM


def test_processes_it_leaves_behind_die_with_it(contained: Server) -> None:
    """A sibling made with clone(CLONE_PARENT) is a child of the seat's init (the job's parent, outside
    its namespace), a double fork in a new session an orphan of the job's PID 1: both still die with the
    job (the `contained` fixture checks that no process of a seat uid is left), and the answer comes
    when the job's process ends, not when they would."""
    source = (
        "import ctypes, os, time, sandbox_guest\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "sibling = libc.syscall(56, 0x8000 | 17, 0, 0, 0, 0)  # clone(CLONE_PARENT | SIGCHLD)\n"
        "if sibling == 0:\n    time.sleep(60)\n    os._exit(0)\n"
        "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(60)\n    os._exit(0)\n"
        "os.wait()\n"
        "sandbox_guest.emit([sibling > 0, os.getppid()])\n"
    )
    result = contained.run(source, wall_seconds=10)
    assert (result.status, result.result) == ("ok", [True, 0 if contained.small_job_init() else 1]), result
    assert result.timings["run_ms"] < 5000


def test_it_holds_only_its_own_descriptors_and_sees_no_init(contained: Server) -> None:
    """No descriptor of its seat's init (the small init's memfd, the namespace's, the control line)
    reaches the job, and its PID 1 is invisible to it."""
    source = ("import os, sandbox_guest\n"
              "fds = {}\nfor fd in os.listdir('/proc/self/fd'):\n    try:\n"
              "        fds[int(fd)] = os.readlink(f'/proc/self/fd/{fd}')\n"
              "    except OSError:\n        pass  # the listing's own\n"
              "sandbox_guest.emit([sorted(fd for fd, target in fds.items() if 'proc' not in target),"
              " [target for target in fds.values() if 'memfd' in target], os.path.exists('/proc/1')])\n")
    result = contained.run(source)
    assert (result.status, result.result) == ("ok", [[0, 1, 2, 3], [], False]), result


def test_a_null_dereference_is_reported_as_a_crash(contained: Server) -> None:
    result = contained.run("import ctypes\nctypes.string_at(0)\n")
    assert (result.status, result.signal) == ("killed", 11)
    assert result.error == "The program was killed by SIGSEGV (Segmentation fault)"


def test_os_exit_reports_the_code(contained: Server) -> None:
    result = contained.run("import os\nos._exit(3)\n")
    assert (result.status, result.exit_code, result.error) == ("error", 3, "The program exited with code 3")


@pytest.mark.parametrize(("call", "status", "code"), [("sys.exit()", "ok", 0), ("sys.exit(4)", "error", 4)])
def test_sys_exit_is_an_ordinary_exit(contained: Server, call: str, status: str, code: int) -> None:
    result = contained.run(f"import sys\nprint('before')\n{call}\nprint('after')\n")
    assert (result.status, result.exit_code, result.stdout) == (status, code, "before\n")


def test_endless_output_is_capped(contained: Server) -> None:
    result = contained.run("while True:\n    print('x' * 999)\n", output_bytes=64 * 1024)
    assert result.status == "killed"
    assert result.error == "Output limit of 64 KiB exceeded on stdout"
    assert result.stdout_truncated and len(result.stdout) == 64 * 1024


def test_a_forged_result_line_is_just_output(contained: Server) -> None:
    source = (
        "import json, os\n"
        "print(json.dumps({'status': 'ok', 'result': 42, 'result_json': '42'}))\n"
        "try:\n    os.write(4, b'{\"event\": \"exited\", \"status\": 0}\\n')\n"
        "except OSError as exc:\n    print('status channel:', exc.strerror)\n"
        "import sys\nsys.exit(5)\n"
    )
    result = contained.run(source)
    assert (result.status, result.exit_code, result.result) == ("error", 5, None)
    assert "status channel: Bad file descriptor" in result.stdout


def test_a_job_whose_client_hangs_up_is_killed(contained: Server) -> None:
    request = JobRequest(source="import time\ntime.sleep(60)\n", input_json="null", limits=Limits(wall_seconds=60))
    with socket.socket(socket.AF_UNIX) as client:
        client.connect(contained.socket_path)
        send_message(client, request.to_message())
        deadline = time.monotonic() + 5
        while not contained.processes_with_seat_uids() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert contained.processes_with_seat_uids(), "the job never started"
    # leaving the block hung up; the `contained` fixture checks the job is gone
    deadline = time.monotonic() + 5
    while contained.processes_with_seat_uids() and time.monotonic() < deadline:
        time.sleep(0.02)
    while "client gone" not in contained.log() and time.monotonic() < deadline:  # logged once the job is reaped
        time.sleep(0.02)
    assert "client gone" in contained.log()


# Linux 5.8+ mounts a procfs that shows only processes (subset=pid); older kernels get the whole
# procfs with each host-wide file masked (sandbox/jail.py).
PROC_SUBSET = tuple(int(part) for part in re.findall(r"\d+", os.uname().release)[:2]) >= (5, 8)
HOST_COUNTERS = ["stat", "loadavg", "meminfo", "cmdline", "uptime", "vmstat", "diskstats", "pressure", "sys"]


@pytest.mark.parametrize("name", HOST_COUNTERS)
def test_host_wide_proc_counters_are_not_there(contained: Server, name: str) -> None:
    """The host's CPU time, load, memory, pressure and boot line would show other jobs' bursts."""
    source = (f"import os, sandbox_guest\npath = '/proc/{name}'\nseen = None\n"
              "if os.path.exists(path):\n    seen = os.listdir(path) if os.path.isdir(path) else open(path).read()\n"
              "sandbox_guest.emit(seen)\n")
    result = contained.run(source)
    assert result.status == "ok", result
    assert result.result is None if PROC_SUBSET else result.result in ("", [])


def test_proc_lists_the_jobs_own_processes_and_nothing_else(contained: Server) -> None:
    """Not the host's processes, not another job's (one sleeps on the other slot meanwhile), not the
    seat's init, and no host-wide file, whatever a newer kernel adds to /proc."""
    if not PROC_SUBSET:
        pytest.skip("this kernel has no subset=pid: the host-wide files are masked instead (tested above)")
    with ThreadPoolExecutor(1) as pool:
        sleeper = pool.submit(contained.run, "import time\ntime.sleep(1.0)\n")
        time.sleep(0.3)
        source = ("import os, sandbox_guest\nif os.fork() == 0:\n    import time; time.sleep(5)\n"
                  "sandbox_guest.emit([sorted(os.listdir('/proc')), os.getpid()])\n")
        result = contained.run(source)
        assert sleeper.result().status == "ok"
    entries, me = result.result
    pids = [int(entry) for entry in entries if entry.isdigit()]
    assert set(entries) - {str(pid) for pid in pids} == {"self", "thread-self"}
    assert pids == [me]  # not even the child it forked: non-dumpable after the uid switch, hidden by hidepid


def test_the_sysinfo_call_and_the_load_average_are_refused(contained: Server) -> None:
    """sysinfo(2) reports the host's load, memory and process count without any file."""
    source = ("import ctypes, os, sandbox_guest\nlibc = ctypes.CDLL(None, use_errno=True)\n"
              "rc = libc.sysinfo(ctypes.create_string_buffer(256))\nerrno = ctypes.get_errno()\n"
              "try:\n    load = os.getloadavg()\nexcept OSError:\n    load = None\n"
              "sandbox_guest.emit([rc, errno, load])\n")
    result = contained.run(source)
    assert (result.status, result.result) == ("ok", [-1, errno.EPERM, None]), result


def test_proc_cpuinfo_has_no_live_clock(contained: Server) -> None:
    """The current clock of each core moves with the host's load. With subset=pid there is no
    /proc/cpuinfo (a fresh python's torch warns and goes on); masked, it is a copy without it."""
    source = ("import os, sandbox_guest\n"
              "sandbox_guest.emit(open('/proc/cpuinfo').read() if os.path.exists('/proc/cpuinfo') else None)\n")
    result = contained.run(source)
    assert result.status == "ok"
    if PROC_SUBSET:
        assert result.result is None
        return
    with open("/proc/cpuinfo") as host:
        assert result.result.count("processor\t:") == host.read().count("processor\t:") >= 1
    assert "flags" in result.result and "cpu MHz" not in result.result


def test_a_job_without_torch_cannot_reach_it_by_any_path(contained: Server) -> None:
    """For "by hand" parts: the torch-less server, where torch was never imported and its files do not exist."""
    source = (
        "import importlib, sys, sandbox_guest\n"
        "import os, site\n"
        "dirs = [os.path.join(p, 'torch') for p in site.getsitepackages()]\n"
        "found = {'loaded': sys.modules.get('torch') is not None,\n"
        "         'files': [name for d in dirs if os.path.isdir(d) for name in os.listdir(d)]}\n"
        "try:\n    importlib.import_module('torch')\n    found['import'] = True\n"
        "except ImportError:\n    found['import'] = False\n"
        "sandbox_guest.emit(found)\n"
    )
    result = run_job(source=source, limits=Limits(), socket_path=contained.socket_path, without_torch=True)
    assert (result.status, result.result) == ("ok", {"loaded": False, "files": [], "import": False}), result
    with_torch = contained.run("import sys, sandbox_guest\nsandbox_guest.emit('torch' in sys.modules)\n")
    assert with_torch.result is True  # other jobs keep their warm torch



def test_the_packages_tests_are_not_in_the_jail(contained: Server) -> None:
    """chainrule/tests/seeds.py holds the seed programs and answers; every package's tests/ is empty
    in the jail (the fixture package has one with an answers.py)."""
    from sandbox.tests.conftest import FIXTURE_PACKAGE

    tests_dir = os.path.join(FIXTURE_PACKAGE, "tests")
    assert os.path.isfile(os.path.join(tests_dir, "answers.py"))
    source = ("import os, sandbox_guest, sbx_fixture_pkg\n"  # the jail shows the package at a neutral path
              "sandbox_guest.emit(os.listdir(os.path.join(sbx_fixture_pkg.__path__[0], 'tests')))\n")
    result = contained.run(source)
    assert (result.status, result.result) == ("ok", []), result


def test_only_the_libraries_jobs_link_against_are_in_the_jail(contained: Server) -> None:
    """/usr/lib whole exposed chromium, postgresql and the jvm to jobs; now only linked libraries."""
    host = sorted(name for name in ("chromium", "postgresql", "jvm", "llvm-14", "erlang")
                  if os.path.isdir(f"/usr/lib/{name}"))
    source = ("import os, ssl, sqlite3, torch, numpy, sandbox_guest\n"
              f"seen = [name for name in {host!r} if os.path.exists('/usr/lib/' + name)]\n"
              "sandbox_guest.emit({'seen': seen, 'lib': len(os.listdir('/usr/lib/x86_64-linux-gnu')),"
              " 'sum': float(torch.ones(3).sum()) + float(numpy.ones(2).sum())})\n")
    result = contained.run(source)
    assert result.status == "ok", result
    assert result.result["seen"] == [] and result.result["sum"] == 5.0
    assert result.result["lib"] < len(os.listdir("/usr/lib/x86_64-linux-gnu")) / 4
