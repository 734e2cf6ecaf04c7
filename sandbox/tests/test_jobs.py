"""Ordinary jobs through the real server: results, messages, concurrency, back-pressure."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from sandbox import Limits, SandboxRequestError, run_job
from sandbox.protocol import MAX_SOURCE_BYTES
from sandbox.tests.conftest import SLOTS, Server

SEED = (
    "import torch, sandbox_guest\n"
    "x = torch.tensor([sandbox_guest.job_input()['x']], requires_grad=True)\n"
    "z = x ** 2 + 3 * x\nz.backward()\n"
    "sandbox_guest.emit({'x.grad': x.grad.item()})\n"
)


def test_it_runs_the_seed_example(server: Server) -> None:
    result = server.run(SEED, input={"x": 2.0})
    assert (result.status, result.result, result.backend) == ("ok", {"x.grad": 7.0}, "hardened")
    assert {"run_ms", "cpu_ms", "roundtrip_ms"} <= set(result.timings)


def test_it_reports_the_last_traceback_line_with_the_job_line(server: Server) -> None:
    result = server.run("x = 1\ny = x / 0\n")
    assert result.status == "error"
    assert result.error == "ZeroDivisionError: division by zero (job.py, line 2)"
    assert "Traceback" in result.stderr and "sandbox_guest" not in result.stderr


def test_a_syntax_error_is_a_clear_error(server: Server) -> None:
    result = server.run("def broken(:\n")
    assert result.status == "error"
    assert result.error is not None and result.error.startswith("SyntaxError")


def test_emit_is_accepted_once(server: Server) -> None:
    result = server.run("import sandbox_guest\nsandbox_guest.emit(1)\nsandbox_guest.emit(2)\n")
    assert result.status == "error" and result.result == 1
    assert result.error is not None and "only once" in result.error


def test_a_result_over_the_cap_is_refused_inside_the_job(server: Server) -> None:
    result = server.run("import sandbox_guest\nsandbox_guest.emit('x' * 5000)\n", result_bytes=4096)
    assert result.status == "error" and result.result is None
    assert result.error is not None and "limit is 4096 bytes" in result.error


def test_a_result_written_past_the_guest_is_capped(server: Server) -> None:
    result = server.run("import os\nos.write(3, b'[' + b'1,' * 5000 + b'1]')\n", result_bytes=4096)
    assert (result.status, result.error) == ("killed", "Result larger than 4 KiB")


def test_stdout_and_stderr_are_kept(server: Server) -> None:
    result = server.run("import sys\nprint('out')\nprint('err', file=sys.stderr)\n")
    assert (result.stdout, result.stderr, result.stdout_truncated) == ("out\n", "err\n", False)


def test_random_state_differs_between_jobs(server: Server) -> None:
    source = "import random, torch, sandbox_guest\nsandbox_guest.emit([random.random(), torch.rand(1).item()])\n"
    first, second = server.run(source).result, server.run(source).result
    assert first[0] != second[0] and first[1] != second[1]


def test_jobs_run_in_parallel_up_to_the_slot_count(server: Server) -> None:
    sleeper = "import time\ntime.sleep(0.5)\n"
    started = time.monotonic()
    with ThreadPoolExecutor(SLOTS) as pool:
        results = list(pool.map(lambda _: server.run(sleeper), range(SLOTS)))
    assert all(r.status == "ok" for r in results)
    assert time.monotonic() - started < 0.5 * SLOTS


def test_excess_jobs_wait_for_a_slot(server: Server) -> None:
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: server.run(f"import sandbox_guest\nsandbox_guest.emit({i})\n"), range(12)))
    assert [r.result for r in results] == list(range(12))


def test_an_oversized_source_is_rejected(server: Server) -> None:
    with pytest.raises(SandboxRequestError, match="source must be a string"):
        run_job(source="#" * (MAX_SOURCE_BYTES + 1), socket_path=server.socket_path)


def test_impossible_limits_are_rejected_before_sending(server: Server) -> None:
    with pytest.raises(SandboxRequestError, match="memory_mb"):
        run_job(source="pass", limits=Limits(memory_mb=1), socket_path=server.socket_path)


def test_a_fresh_interpreter_runs_in_the_same_jail(server: Server) -> None:
    source = SEED + "import os\nprint(os.getuid() >= 60000, os.listdir('/proc'))\n"
    result = run_job(source=source, input={"x": 2.0}, socket_path=server.socket_path, fresh_interpreter=True,
                     limits=Limits(wall_seconds=60, cpu_seconds=30))
    assert result.status == "ok", result.stderr
    assert result.result == {"x.grad": 7.0}
    assert result.stdout.startswith("True ['")


def test_a_large_result_arrives_whole(server: Server) -> None:
    """A reply bigger than the socket buffer (the analysis of a big graph) is sent in full,
    not dropped as if the client had gone (the proxy's fd may be non-blocking)."""
    source = "import sandbox_guest\nsandbox_guest.emit({'blob': 'x' * (6 * 1024 * 1024)})\n"
    result = server.run(source, result_bytes=8 * 1024 * 1024)
    assert result.status == "ok", result.error
    assert result.result is not None and len(result.result["blob"]) == 6 * 1024 * 1024


def test_a_jobs_log_fields_are_on_its_log_line_as_json(server: Server) -> None:
    """The grader tags each job with its submission: web, worker and sandbox lines all name it."""
    result = run_job(source="print('tagged')", socket_path=server.socket_path, log_fields={"submission_id": 4242})
    assert result.status == "ok"
    deadline = time.monotonic() + 5
    while not (lines := [e for e in server.log_entries() if e.get("submission_id") == 4242]):
        assert time.monotonic() < deadline, server.log()[-2000:]
        time.sleep(0.05)
    assert lines[0]["message"].startswith(f"seat {lines[0]['seat']}: ok") and lines[0]["logger"] == "sandbox"


@pytest.mark.parametrize("fields", [{"Submission": 1}, {"pid": 1}, {"submission_id": True},
                                    {"submission_id": "x" * 201}, {f"f{n}": n for n in range(9)}])
def test_log_fields_that_could_garble_the_log_are_refused(server: Server, fields: dict[str, object]) -> None:
    with pytest.raises(SandboxRequestError):
        run_job(source="print(1)", socket_path=server.socket_path, log_fields=fields)  # type: ignore[arg-type]


def test_a_job_without_torch_is_forked_warm_not_a_fresh_interpreter(server: Server) -> None:
    """The torch-less server's jobs are forked from a zygote that preloaded modules; a fresh python
    (what by-hand parts once cost, ~120 ms) would have to import them itself."""
    source = ("import sys, sandbox_guest\n"
              "sandbox_guest.emit(['sbx_fixture_pkg' in sys.modules, sys.modules.get('torch') is not None])")
    result = run_job(source=source, socket_path=server.socket_path, without_torch=True)
    assert (result.status, result.result) == ("ok", [True, False]), result
    assert server.run(source).result == [True, True]


def test_each_server_refuses_the_other_kind_of_job(server: Server) -> None:
    from sandbox.client import TORCHLESS_SUFFIX

    with pytest.raises(SandboxRequestError, match="torch-less"):
        run_job(source="print(1)", socket_path=server.socket_path + TORCHLESS_SUFFIX)
