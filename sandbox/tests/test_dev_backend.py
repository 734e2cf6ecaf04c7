"""The insecure development backend: rlimits only, explicitly enabled, clearly labelled."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

from sandbox import InsecureBackendRefused, Limits, run_job
from sandbox.server import running_server


@pytest.fixture(scope="module")
def dev_socket() -> Iterator[str]:
    directory = tempfile.mkdtemp(prefix="sandbox-dev-test-")
    socket_path = os.path.join(directory, "dev.sock")
    with running_server(socket_path, slots=1, backend="insecure-dev", allow_insecure_dev_backend=True,
                        stderr=open(os.devnull, "wb").fileno()):
        yield socket_path


def test_the_client_refuses_it_unless_allowed(dev_socket: str) -> None:
    with pytest.raises(InsecureBackendRefused, match="insecure development backend"):
        run_job(source="print(1)", socket_path=dev_socket)


def test_it_runs_jobs_and_says_so(dev_socket: str) -> None:
    source = "import torch, sandbox_guest\nsandbox_guest.emit((torch.ones(2) * 3).tolist())\n"
    result = run_job(source=source, socket_path=dev_socket, allow_insecure_dev_backend=True)
    assert (result.status, result.result, result.backend) == ("ok", [3.0, 3.0], "insecure-dev")


def test_it_still_enforces_the_wall_clock_and_kills_the_group(dev_socket: str) -> None:
    source = ("import os, time\nchild = os.fork()\nif child == 0:\n    time.sleep(60)\n"
              "print(child, flush=True)\ntime.sleep(60)\n")
    result = run_job(source=source, socket_path=dev_socket, allow_insecure_dev_backend=True,
                     limits=Limits(wall_seconds=1))
    assert (result.status, result.error) == ("timeout", "Time limit of 1 s exceeded")
    assert not os.path.exists(f"/proc/{int(result.stdout)}")
