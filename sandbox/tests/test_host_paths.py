"""A job reads nothing that names where the checkout or the venv lives on the host."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from sandbox.tests.conftest import Server

CHECKOUT = str(Path(__file__).resolve().parents[2])
HOST_PATHS = sorted({CHECKOUT, sys.prefix, os.path.realpath(sys.prefix)})

LOOK_AROUND = """
import json, os, sys, sandbox_guest, sbx_fixture_pkg
seen = {
    'mountinfo': open('/proc/self/mountinfo').read(),
    'mounts': open('/proc/self/mounts').read(),
    'cmdline': open('/proc/self/cmdline').read(),
    'environ': dict(os.environ),
    'path': sys.path, 'prefix': [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.executable],
    'files': sorted(str(getattr(m, '__file__', '')) for m in list(sys.modules.values()) if m is not None),
    'package': list(sbx_fixture_pkg.__path__),
}
print(json.dumps(seen))
import torch
torch.tensor([1.0]).backward()
"""


def test_a_job_sees_no_host_path(server: Server) -> None:
    result = server.run(LOOK_AROUND)
    assert result.status == "error" and "RuntimeError" in result.stderr  # the traceback goes through torch
    assert 'File "/venv/lib/' in result.stderr and "torch/_tensor.py" in result.stderr
    assert "/packages/sbx_fixture_pkg" in result.stdout and '"/venv"' in result.stdout
    seen = json.loads(result.stdout)
    for host in HOST_PATHS:
        assert [key for key, value in seen.items() if host in json.dumps(value)] == [], host
        assert host not in result.stderr, host


def test_lazy_imports_and_a_fresh_interpreter_still_work(server: Server) -> None:
    """Modules not imported by the zygote load from the jail's neutral paths."""
    source = ("import sys, sandbox_guest, email.mime.text, torch.distributions\n"
              "sandbox_guest.emit([torch.distributions.__file__, sys.prefix])\n")
    warm = server.run(source)
    assert warm.status == "ok", warm
    assert warm.result[0].startswith("/venv/lib/") and warm.result[1] == "/venv"
    from sandbox import Limits, run_job

    fresh = run_job(source=source, limits=Limits(wall_seconds=30, cpu_seconds=30), socket_path=server.socket_path,
                    fresh_interpreter=True)
    assert fresh.status == "ok", fresh
    assert fresh.result[0].startswith("/venv/lib/") and fresh.result[1] == "/python"


def test_every_job_starts_with_fresh_process_ids(server: Server) -> None:
    """One slot's seats alternate; whichever runs it, a job is process 2 of its own namespace (pid 1
    is the job's init; its parent, the seat's init, is outside the namespace: getppid() is 0, or 1
    where the small job init cannot run and a forked one is its parent), and what it forked before is gone."""
    source = ("import os, sandbox_guest\nif os.fork() == 0:\n    os._exit(0)\nos.wait()\n"
              "sandbox_guest.emit([os.getpid(), os.getppid(), os.readlink('/proc/self')])\n")
    seen = [server.run(source).result for _ in range(6)]
    assert seen == [[2, 0 if server.small_job_init() else 1, "2"]] * 6
