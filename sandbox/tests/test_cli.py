"""`python -m sandbox run|serve` as a user or a script would call it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.server import seat_uid_count
from sandbox.tests.conftest import Server, free_uid_base

PROJECT = str(Path(__file__).resolve().parents[2])
SEED = ("import torch, sandbox_guest\nx = torch.tensor([2.0], requires_grad=True)\n"
        "z = x ** 2 + 3 * x\nz.backward()\nprint('grad', x.grad.item())\nsandbox_guest.emit(x.grad.item())\n")


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SANDBOX_SOCKET"}
    return subprocess.run([sys.executable, "-m", "sandbox", *args], cwd=PROJECT, capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.fixture
def seed_file(tmp_path: Path) -> str:
    path = tmp_path / "seed.py"
    path.write_text(SEED)
    return str(path)


def test_run_uses_the_running_server(server: Server, seed_file: str) -> None:
    completed = _cli("run", seed_file, "--socket", server.socket_path, "--json")
    assert completed.returncode == 0, completed.stderr
    document = json.loads(completed.stdout)
    assert (document["status"], document["result"], document["stdout"]) == ("ok", 7.0, "grad 7.0\n")
    assert set(document) >= {"exit_code", "signal", "stderr", "stdout_truncated", "error", "timings", "backend"}


def test_run_passes_input_and_limits(server: Server, tmp_path: Path) -> None:
    path = tmp_path / "job.py"
    path.write_text("import time, sandbox_guest\nsandbox_guest.emit(sandbox_guest.job_input())\ntime.sleep(5)\n")
    completed = _cli("run", str(path), "--socket", server.socket_path, "--json", "--timeout", "1",
                     "--input", '{"k": [1, 2]}')
    document = json.loads(completed.stdout)
    assert (document["status"], document["error"], document["result"]) == (
        "timeout", "Time limit of 1 s exceeded", {"k": [1, 2]})


def test_run_starts_a_one_off_server_when_none_answers(hardened: None, seed_file: str, tmp_path: Path) -> None:
    uid_base = str(free_uid_base(seat_uid_count(1), start=64000))
    completed = _cli("run", seed_file, "--socket", str(tmp_path / "nobody.sock"), "--json", "--uid-base", uid_base)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["result"] == 7.0


@pytest.mark.parametrize(("args", "message"), [
    (["run", "/nonexistent.py"], "No such file"),
    (["run", __file__, "--input", "{nope"], "Expecting property name"),
    (["run", __file__, "--memory", "1"], "memory_mb=1 is outside the possible range"),
])
def test_run_exits_2_on_unusable_input(args: list[str], message: str) -> None:
    completed = _cli(*args)
    assert completed.returncode == 2
    assert message in completed.stderr


def test_serve_refuses_the_development_backend_unless_allowed(tmp_path: Path) -> None:
    completed = _cli("serve", "--socket", str(tmp_path / "s.sock"), "--backend", "insecure-dev", timeout=60)
    assert completed.returncode == 2
    assert "--allow-insecure-dev-backend" in completed.stderr
