"""Starting and stopping the server leaves nothing behind, even when it is killed."""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox import Limits, SandboxError, run_job
from sandbox.server import seat_uid_count, spawn_server, stop_server
from sandbox.tests.conftest import free_uid_base


@pytest.fixture
def uids(hardened: None) -> range:
    base = free_uid_base(seat_uid_count(1), start=63000)
    uids = range(base, base + seat_uid_count(1))
    assert not _processes(lambda cmdline, uid: uid in uids)
    return uids



def _processes(predicate: Callable[[bytes, int], bool]) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            uid = os.stat(f"/proc/{entry}").st_uid
        except OSError:
            continue
        if predicate(cmdline, uid):
            found.append(int(entry))
    return found


def _eventually(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def _start(tmp_path: Path, uids: range) -> tuple[subprocess.Popen[bytes], str]:
    socket_path = str(tmp_path / "life.sock")
    return spawn_server(socket_path, slots=1, uid_base=uids.start, stderr=subprocess.DEVNULL), socket_path


def _ours(socket_path: str, uids: range) -> Callable[[bytes, int], bool]:
    return lambda cmdline, uid: socket_path.encode() in cmdline or uid in uids


def _cgroup_trees(pid: int) -> list[str]:
    return glob.glob(f"/sys/fs/cgroup/**/sandbox-{pid}", recursive=True)


def test_a_stopped_server_leaves_nothing(uids: range, tmp_path: Path) -> None:
    server, socket_path = _start(tmp_path, uids)
    assert run_job(source="print('hi')", socket_path=socket_path).stdout == "hi\n"
    assert _cgroup_trees(server.pid)
    stop_server(server)
    assert server.returncode == 0
    assert _eventually(lambda: not _processes(_ours(socket_path, uids)))
    assert not os.path.exists(socket_path)
    assert not _cgroup_trees(server.pid)


def test_a_killed_server_takes_its_jobs_with_it(uids: range, tmp_path: Path) -> None:
    server, socket_path = _start(tmp_path, uids)
    outcome: dict[str, object] = {}

    def run_sleeper() -> None:
        try:
            run_job(source="import time\ntime.sleep(60)\n", socket_path=socket_path, limits=Limits(wall_seconds=60))
        except SandboxError as exc:
            outcome["error"] = exc

    sleeper = threading.Thread(target=run_sleeper)
    sleeper.start()
    assert _eventually(lambda: any(uid in uids for uid in _uids()))
    os.kill(server.pid, signal.SIGKILL)
    server.wait()
    sleeper.join(10)
    assert isinstance(outcome.get("error"), SandboxError)
    assert _eventually(lambda: not _processes(_ours(socket_path, uids))), "a sandbox process survived its server"
    # The uid locks died with it: a new server may take the same seats (and sweeps the stale cgroups).
    replacement, _ = _start(tmp_path, uids)
    try:
        assert not _cgroup_trees(server.pid)
    finally:
        stop_server(replacement)


def _uids() -> list[int]:
    uids = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            uids.append(os.stat(f"/proc/{entry}").st_uid)
        except OSError:
            continue
    return uids


def _children(pid: int) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        if f"\nPPid:\t{pid}\n" in status:
            found.append(int(entry))
    return found


def _pid_levels(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return len(next(line for line in status.splitlines() if line.startswith("NSpid:")).split()) - 1


def _proxy_spawner(zygote: int) -> int:
    """The zygote's child whose children (the proxies) all live outside any namespace of the sandbox's;
    its other children are the seat inits and the torch-less sibling (whose children are seat inits)."""
    for child in _children(zygote):
        with contextlib.suppress(OSError, StopIteration):
            grandchildren = _children(child)
            if _pid_levels(child) == 1 and grandchildren and all(_pid_levels(g) == 1 for g in grandchildren):
                return child
    raise AssertionError("no proxy spawner found")


def test_a_dead_proxy_spawner_stops_the_server_and_its_jobs(uids: range, tmp_path: Path) -> None:
    """Its proxies die with it: the running job's client gets an infrastructure error at once (never a
    verdict, never a hang), the server exits non-zero for its supervisor, and nothing is left."""
    server, socket_path = _start(tmp_path, uids)
    outcome: dict[str, object] = {}

    def run_sleeper() -> None:
        try:
            outcome["result"] = run_job(source="import time\ntime.sleep(60)\n", socket_path=socket_path,
                                        limits=Limits(wall_seconds=60))
        except SandboxError as exc:
            outcome["error"] = exc

    sleeper = threading.Thread(target=run_sleeper)
    sleeper.start()
    assert _eventually(lambda: any(uid in uids for uid in _uids()))
    os.kill(_proxy_spawner(server.pid), signal.SIGKILL)
    sleeper.join(10)
    assert isinstance(outcome.get("error"), SandboxError), outcome
    assert server.wait(20) == 1
    assert _eventually(lambda: not _processes(_ours(socket_path, uids))), "a sandbox process survived its spawner"
