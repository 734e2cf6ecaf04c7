"""One real sandbox server per test session, on a temporary socket."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandbox import JobResult, Limits, job_init, run_job
from sandbox.backends import BackendUnavailable, claim_seat_uids, hardened_unavailable_reason
from sandbox.server import seat_uid_count, spawn_server, stop_server

SLOTS = 2
FIXTURE_PACKAGE = str(Path(__file__).parent / "fixtures" / "sbx_fixture_pkg")
# Put a secret where a careless server would inherit it; every test checks it never reaches a job.
SECRET = "sandbox-test-secret-" + secrets.token_hex(16)
os.environ["SANDBOX_TEST_SECRET"] = SECRET


@dataclass
class Server:
    socket_path: str
    process: subprocess.Popen[bytes]
    log_path: str
    uids: range

    def run(self, source: str, *, input: object = None, **limits: float) -> JobResult:
        return run_job(source=source, input=input, limits=Limits(**limits), socket_path=self.socket_path)  # type: ignore[arg-type]

    def processes_with_seat_uids(self) -> list[int]:
        found = []
        for entry in os.listdir("/proc"):
            try:
                if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid in self.uids:
                    found.append(int(entry))
            except OSError:
                continue
        return found

    def log(self) -> str:
        return Path(self.log_path).read_text()

    def small_job_init(self) -> bool:
        """Whether its jobs' PID 1 is the small program (their parent then is the seat's init, outside
        the namespace: getppid() is 0), not the forked Python init (their parent, pid 1): the seat
        inits fall back, and say so, when the kernel will not execute the memfd (vm.memfd_noexec)."""
        return job_init.image() is not None and "the small job init cannot run" not in self.log()

    def log_entries(self) -> list[dict[str, Any]]:
        """The server's JSON log lines (sandbox/logs.py)."""
        return [json.loads(line) for line in self.log().splitlines() if line.startswith("{")]


def free_uid_base(count: int, start: int = 62000) -> int:
    """A uid range no other sandbox server holds right now (test sessions may run side by side)."""
    for base in range(start, start + 64 * 100, 64):
        uids = list(range(base, base + count))
        try:
            for fd in claim_seat_uids(uids):
                os.close(fd)  # released at once: the server claims them again for good
        except BackendUnavailable:
            continue
        return base
    raise RuntimeError("no free uid range for a test sandbox server")


@pytest.fixture(scope="session")
def hardened() -> None:
    reason = hardened_unavailable_reason()
    if reason:
        pytest.skip(f"hardened sandbox unavailable here: {reason}")


@pytest.fixture(scope="session")
def server(hardened: None) -> Iterator[Server]:
    directory = tempfile.mkdtemp(prefix="sandbox-test-")
    socket_path = os.path.join(directory, "sandbox.sock")
    log_path = os.path.join(directory, "server.log")
    base = free_uid_base(seat_uid_count(SLOTS))
    with open(log_path, "wb") as log:
        process = spawn_server(socket_path, slots=SLOTS, uid_base=base, stderr=log.fileno(),
                               package_dirs=(FIXTURE_PACKAGE,), preload=("sbx_fixture_pkg",))
    uids = range(base, base + seat_uid_count(SLOTS))
    yield Server(socket_path, process, log_path, uids)
    stop_server(process)
    print(Path(log_path).read_text()[-3000:], file=sys.stderr)


@pytest.fixture
def contained(server: Server) -> Iterator[Server]:
    """After a hostile job: the server lives, no job process remains, the next job is unaffected."""
    yield server
    assert server.process.poll() is None, "the sandbox server died"
    deadline = time.monotonic() + 2
    while server.processes_with_seat_uids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.processes_with_seat_uids() == [], "a job process outlived its job"
    canary = server.run("import sandbox_guest, torch\nsandbox_guest.emit(torch.tensor([1.5]).tolist())")
    assert (canary.status, canary.result) == ("ok", [1.5]), canary
