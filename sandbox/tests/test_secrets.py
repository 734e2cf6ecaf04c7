"""No job can find a secret or another job's code: not in files, not in /proc, not in memory."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import time
from pathlib import Path

from sandbox.tests.conftest import SECRET, Server

PROJECT = Path(__file__).resolve().parents[2]

# Searches for PREFIX and compares the bytes after it by hash, so the searching job
# never holds the full needle itself (it would otherwise always find its own copy).
_SCAN_JOB = r'''
import ctypes, gc, hashlib, sandbox_guest
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: make /proc/self/mem ours to read
needles = sandbox_guest.job_input()
found = {name: {"memory": False, "objects": False} for name in needles}


def matches(blob, prefix, length, digest):
    start = blob.find(prefix)
    while start != -1:
        if hashlib.sha256(blob[start:start + length]).hexdigest() == digest:
            return True
        start = blob.find(prefix, start + 1)
    return False

regions = 0
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        fields = line.split()
        if "r" not in fields[1] or (len(fields) > 5 and fields[5] not in ("[heap]", "[stack]")):
            continue
        start, end = (int(v, 16) for v in fields[0].split("-"))
        try:
            mem.seek(start)
            blob = mem.read(end - start)
        except OSError:
            continue
        regions += 1
        for name, (prefix, length, digest) in needles.items():
            found[name]["memory"] |= matches(blob, prefix.encode(), length, digest)
for obj in gc.get_objects():
    for text in [v for v in (obj.values() if isinstance(obj, dict) else obj) if isinstance(v, str)] \
            if isinstance(obj, (dict, list, tuple)) else []:
        for name, (prefix, length, digest) in needles.items():
            found[name]["objects"] |= matches(text.encode(), prefix.encode(), length, digest)
sandbox_guest.emit({"found": found, "regions": regions})
'''


def _needle(text: str, prefix_length: int = 12) -> list[object]:
    return [text[:prefix_length], len(text.encode()), hashlib.sha256(text.encode()).hexdigest()]


def _scan_job(server: Server, **needles: str) -> dict[str, dict[str, bool]]:
    result = server.run(_SCAN_JOB, input={name: _needle(text) for name, text in needles.items()},
                        wall_seconds=20, cpu_seconds=15)
    assert result.status == "ok", result
    assert result.result["regions"] > 0
    return result.result["found"]


def _process_memory_contains(pid: int, needle: bytes) -> bool:
    """Read a host process's heap (the test runs as root); False if it exited meanwhile."""
    try:
        maps, mem = open(f"/proc/{pid}/maps"), open(f"/proc/{pid}/mem", "rb", 0)
    except FileNotFoundError:
        return False
    with maps, mem:
        for line in maps:
            fields = line.split()
            if "r" not in fields[1] or (len(fields) > 5 and fields[5] != "[heap]"):
                continue
            start, end = (int(v, 16) for v in fields[0].split("-"))
            try:
                mem.seek(start)
                if needle in mem.read(end - start):
                    return True
            except OSError:
                continue
    return False


def test_the_scanner_finds_what_is_there(contained: Server) -> None:
    marker = "scanner-control-" + secrets.token_hex(8)
    source = f"KEEP = {marker!r}\n" + _SCAN_JOB
    result = contained.run(source, input={"own": _needle(marker)}, wall_seconds=20, cpu_seconds=15)
    assert result.result["found"]["own"] == {"memory": True, "objects": True}


def test_a_job_cannot_find_another_jobs_code_or_the_servers_secret(contained: Server) -> None:
    marker = "other-job-code-" + secrets.token_hex(8)
    first = contained.run(f"ANSWER = {marker!r}\nprint(len(ANSWER))\n")
    assert first.status == "ok"
    found = _scan_job(contained, other_job=marker, secret=SECRET)
    assert found == {"other_job": {"memory": False, "objects": False},
                     "secret": {"memory": False, "objects": False}}


def test_the_zygote_and_idle_proxies_never_hold_job_code(contained: Server) -> None:
    marker = "zygote-must-not-see-" + secrets.token_hex(8)
    assert contained.run(f"X = {marker!r}\n").status == "ok"
    # The proxy that served the job legitimately holds it; wait until it has exited.
    served = [entry["pid"] for entry in contained.log_entries() if re.match(r"seat \d+: ok", entry["message"])]
    serving_proxy = served[-1]
    deadline = time.monotonic() + 5
    while os.path.exists(f"/proc/{serving_proxy}") and time.monotonic() < deadline:
        time.sleep(0.01)
    family = [contained.process.pid] + _descendants(contained.process.pid)
    assert len(family) > 1
    for pid in family:
        assert not _process_memory_contains(pid, marker.encode()), f"process {pid} holds job code"


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, pending = [], [root]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def test_the_server_runs_with_an_empty_environment(contained: Server) -> None:
    with open(f"/proc/{contained.process.pid}/environ", "rb") as environ:
        assert environ.read() == b""


def test_a_job_sees_only_its_own_environment(contained: Server) -> None:
    source = "import os, sandbox_guest\nsandbox_guest.emit(dict(os.environ))\n"
    environment = contained.run(source).result
    assert SECRET not in str(environment)
    assert environment["HOME"] == "/job" and "SANDBOX_TEST_SECRET" not in environment


def test_proc_shows_only_the_job(contained: Server) -> None:
    source = (
        "import os, sandbox_guest\n"
        "pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
        "readable = {}\n"
        "for pid in pids + [1, int(sandbox_guest.job_input())]:\n"
        "    try:\n        readable[pid] = open(f'/proc/{pid}/environ', 'rb').read().decode()\n"
        "    except OSError as exc:\n        readable[pid] = exc.strerror\n"
        "sandbox_guest.emit({'pids': pids, 'me': os.getpid(), 'environ': readable})\n"
    )
    result = contained.run(source, input=contained.process.pid)
    assert result.result["pids"] == [result.result["me"]]
    environ = result.result["environ"]
    assert environ["1"] == "No such file or directory"  # the init is hidden
    assert environ[str(contained.process.pid)] == "No such file or directory"
    assert SECRET not in str(environ)


def test_dumpable_again_its_own_environ_holds_nothing(contained: Server) -> None:
    source = (
        "import ctypes, sandbox_guest\nctypes.CDLL(None).prctl(4, 1, 0, 0, 0)\n"
        "sandbox_guest.emit(open('/proc/self/environ', 'rb').read().decode())\n"
    )
    result = contained.run(source)
    assert result.status == "ok"
    assert result.result == ""


def test_only_the_allow_list_of_the_project_is_visible(contained: Server) -> None:
    project = str(PROJECT)  # wherever the checkout is (a CI clone may live under /tmp)
    source = (
        "import os, sandbox_guest, sbx_fixture_pkg\nfrom sbx_fixture_pkg import lazy\n"
        "tree = {p: sorted(os.listdir(p)) for p in ['/', '/packages', '/guest']}\n"
        f"sandbox_guest.emit({{'tree': tree, 'project': os.path.exists({project!r}), 'lazy': lazy.VALUE}})\n"
    )
    result = contained.run(source)
    assert result.status == "ok", result.error
    tree = result.result["tree"]
    assert result.result["project"] is False  # the checkout's path is not in the jail at all
    assert tree["/packages"] == ["sbx_fixture_pkg"]
    assert [name for name in tree["/guest"] if name.endswith(".py")] == ["sandbox_guest.py"]
    assert not {"etc", "home", "root", "var", "work"} & set(tree["/"])
    assert {"python", "venv", "packages", "guest"} <= set(tree["/"])
    assert result.result["lazy"] == 42


def test_the_log_shows_no_proxy_crash(contained: Server) -> None:
    assert not re.search(r"proxy failed|Traceback", contained.log())
