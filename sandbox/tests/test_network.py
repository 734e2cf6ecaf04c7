"""Sandbox hosts on the network: real servers, real mutual TLS, certificates from deploy/make-secrets.sh."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandbox import Limits, run_job
from sandbox.client import SandboxError, SandboxNotStarted, status
from sandbox.network import Endpoint, EndpointError, TlsFiles, client_context, parse_endpoints
from sandbox.pool import EndpointPool
from sandbox.server import seat_uid_count, spawn_server, stop_server
from sandbox.tests.conftest import free_uid_base

ROOT = Path(__file__).resolve().parents[2]
LOOP = "while True:\n    pass\n"


def make_pki(directory: Path, hosts: str) -> Path:
    subprocess.run(["sh", str(ROOT / "deploy" / "make-secrets.sh")], check=True, capture_output=True,
                   env={**os.environ, "SECRETS_DIR": str(directory), "SANDBOX_HOSTS": hosts})
    return directory / "sandbox-tls"


def tls_files(pki: Path, name: str) -> TlsFiles:
    return TlsFiles(ca=str(pki / "ca.crt"), cert=str(pki / f"{name}.crt"), key=str(pki / f"{name}.key"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Host:
    endpoint: str
    socket_path: str
    process: subprocess.Popen[bytes]
    log_path: str

    def jobs_run(self) -> int:
        return sum('"seat ' in line and ' in ' in line for line in Path(self.log_path).read_text().splitlines())


@pytest.fixture(scope="module")
def pki() -> Iterator[tuple[Path, Path]]:
    with tempfile.TemporaryDirectory(prefix="sandbox-pki-") as directory:
        ours = make_pki(Path(directory) / "ours", "localhost other.example")
        theirs = make_pki(Path(directory) / "theirs", "localhost")  # another deployment's CA
        yield ours, theirs


@pytest.fixture(scope="module")
def hosts(hardened: None, pki: tuple[Path, Path]) -> Iterator[list[Host]]:
    """Two sandbox hosts of one slot each, listening on TLS."""
    started: list[Host] = []
    directory = tempfile.mkdtemp(prefix="sandbox-net-")
    try:
        for name in ("a", "b"):
            socket_path, log_path, port = f"{directory}/{name}.sock", f"{directory}/{name}.log", free_port()
            with open(log_path, "wb") as log:
                process = spawn_server(socket_path, slots=1, uid_base=free_uid_base(seat_uid_count(1)),
                                       stderr=log.fileno(), listen=f"127.0.0.1:{port}",
                                       tls=tls_files(pki[0], "server-localhost"))
            started.append(Host(f"tls://localhost:{port}", socket_path, process, log_path))
        yield started
    finally:
        for host in started:
            stop_server(host.process)


@pytest.fixture(scope="module")
def client_tls(pki: tuple[Path, Path]) -> ssl.SSLContext:
    return client_context(tls_files(pki[0], "client"))


def impostor(socket_path: str, files: TlsFiles) -> tuple[str, subprocess.Popen[bytes]]:
    """A real TLS listener (its own process) in front of a real server, with certificates we choose."""
    port = free_port()
    script = ("import sys\nfrom sandbox.network import Listener, TlsFiles, bind, server_context\n"
              "Listener(bind(sys.argv[1]), server_context(TlsFiles(*sys.argv[3:6])), sys.argv[2]).serve_forever()\n")
    process = subprocess.Popen([sys.executable, "-c", script, f"127.0.0.1:{port}", socket_path,
                                files.ca, files.cert, files.key], cwd=ROOT, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return f"tls://localhost:{port}", process
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("the test listener did not start")


def test_a_job_runs_over_mutual_tls(hosts: list[Host], client_tls: ssl.SSLContext) -> None:
    source = ("import sys, sandbox_guest\n"
              "sandbox_guest.emit([sandbox_guest.job_input() * 2, sys.modules.get('torch') is not None])")
    result = run_job(source=source, input=21, socket_path=hosts[0].endpoint, tls=client_tls)
    assert (result.status, result.result) == ("ok", [42, True]), result
    by_hand = run_job(source=source, input=1, socket_path=hosts[0].endpoint, tls=client_tls, without_torch=True)
    assert by_hand.result == [2, False]  # the host's listener took it to the torch-less server


@pytest.mark.parametrize("certificate", ["another CA", "another host's name"])
def test_the_client_refuses_a_server_it_cannot_authenticate(
        hosts: list[Host], pki: tuple[Path, Path], client_tls: ssl.SSLContext, certificate: str) -> None:
    files = tls_files(pki[1], "server-localhost") if certificate == "another CA" else \
        tls_files(pki[0], "server-other.example")
    endpoint, process = impostor(hosts[0].socket_path, files)
    before = hosts[0].jobs_run()
    try:
        with pytest.raises(SandboxNotStarted, match="CERTIFICATE_VERIFY_FAILED"):
            run_job(source="print('never sent')", socket_path=endpoint, tls=client_tls)
    finally:
        process.kill()
        process.wait()
    assert hosts[0].jobs_run() == before  # the student's code never left the worker


@pytest.mark.parametrize("client", ["no certificate", "a certificate of another CA"])
def test_the_server_refuses_a_client_it_cannot_authenticate(
        hosts: list[Host], pki: tuple[Path, Path], client: str) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(str(pki[0] / "ca.crt"))  # the client trusts the server all the same
    if client != "no certificate":
        other = tls_files(pki[1], "client")
        context.load_cert_chain(other.cert, other.key)
    before = hosts[0].jobs_run()
    refusals = Path(hosts[0].log_path).read_text().count("network client")
    with pytest.raises(SandboxError):
        run_job(source="print('from a stranger')", socket_path=hosts[0].endpoint, tls=context, timeout=10)
    assert hosts[0].jobs_run() == before

    def refusal_logged() -> bool:  # the listener logs the handshake it refused just after closing it (its
        # words vary with who closes first under TLS 1.3: "certificate required", an unexpected EOF)
        return Path(hosts[0].log_path).read_text().count("network client") > refusals

    deadline = time.monotonic() + 5
    while not refusal_logged() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert refusal_logged()


def test_the_pool_skips_a_dead_endpoint_and_spreads_over_the_live_ones(
        hosts: list[Host], pki: tuple[Path, Path]) -> None:
    dead = f"tls://localhost:{free_port()}"  # nobody listens: refused before anything is sent
    pool = EndpointPool([dead, *(host.endpoint for host in hosts)], tls_files(pki[0], "client"))
    before = [host.jobs_run() for host in hosts]
    results = [pool.run_job(source="import sandbox_guest\nsandbox_guest.emit(sandbox_guest.job_input())", input=n)
               for n in range(16)]
    assert [r.result for r in results] == list(range(16))  # every job once, none lost
    deadline = time.monotonic() + 3  # a seat logs its job just after answering
    while sum(host.jobs_run() for host in hosts) < sum(before) + 16 and time.monotonic() < deadline:
        time.sleep(0.05)
    ran = [host.jobs_run() - b for host, b in zip(hosts, before, strict=True)]
    assert sum(ran) == 16 and min(ran) >= 3, ran  # random among the healthy: both take a share
    assert Endpoint(dead, host="localhost", port=int(dead.rsplit(":", 1)[1])) not in pool.healthy()


def test_a_job_that_may_have_run_is_never_sent_again(hosts: list[Host], pki: tuple[Path, Path]) -> None:
    """A job cut off by its own wall-clock bound fails; the pool does not try the other host."""
    pool = EndpointPool([host.endpoint for host in hosts], tls_files(pki[0], "client"))
    before = sum(host.jobs_run() for host in hosts)
    with pytest.raises(SandboxError) as raised:
        pool.run_job(source=LOOP, limits=Limits(wall_seconds=2, cpu_seconds=2), timeout=0.5)
    assert not isinstance(raised.value, SandboxNotStarted)
    time.sleep(2.5)
    assert sum(host.jobs_run() for host in hosts) == before + 1


def test_status_answers_within_a_second_while_every_slot_is_busy(
        hosts: list[Host], client_tls: ssl.SSLContext) -> None:
    host = hosts[1]
    limits = Limits(wall_seconds=2, cpu_seconds=2)  # long enough to be asked while busy
    loopers = [threading.Thread(target=run_job, kwargs={"source": LOOP, "limits": limits,
                                                        "socket_path": host.socket_path}) for _ in range(3)]
    for looper in loopers:
        looper.start()
    try:
        deadline = time.monotonic() + 3
        while status(socket_path=host.socket_path)["queued"] < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        started = time.monotonic()
        over_tls = status(socket_path=host.endpoint, tls=client_tls, timeout=1.0)
        local = status(socket_path=host.socket_path, timeout=1.0)
        assert time.monotonic() - started < 1.0
        for answer in (over_tls, local):
            assert (answer["slots"], answer["busy"], answer["queued"]) == (1, 1, 2), answer
            assert answer["version"] == 1 and answer["backend"] == "hardened"
    finally:
        for looper in loopers:
            looper.join()


def test_endpoint_lists_are_checked_with_a_clear_error() -> None:
    assert [str(e) for e in parse_endpoints("unix:///run/s.sock, tls://sb-1:7000 tls://sb-1:7000")] == \
        ["unix:///run/s.sock", "tls://sb-1:7000"]
    for bad in ("tls://sb-1", "http://sb-1:7000", "unix://relative/path", "tls://sb-1:notaport"):
        with pytest.raises(EndpointError, match="must be unix:///absolute/path or tls://host:port"):
            parse_endpoints(bad)
    with pytest.raises(EndpointError, match="SANDBOX_TLS_CA"):
        EndpointPool(["tls://sb-1:7000"])


def test_a_failing_endpoint_rests_longer_each_time_and_is_tried_last() -> None:
    pool = EndpointPool(["/run/a.sock", "/run/b.sock", "/run/c.sock"], back_off_seconds=10)
    a, b, c = pool.endpoints
    pool.mark_down(a)
    pool.mark_down(a)  # 20 s
    pool.mark_down(b)  # 10 s
    assert pool.healthy() == [c]
    assert pool.order() == [c, b, a]  # when all else fails, the one back soonest first
    pool.mark_up(a)
    assert sorted(str(e) for e in pool.order()[:2]) == ["unix:///run/a.sock", "unix:///run/c.sock"]
    with pytest.raises(SandboxNotStarted, match="no sandbox endpoint took the job"):
        EndpointPool(["/nonexistent/a.sock", "/nonexistent/b.sock"]).run_job(source="print(1)")


def test_no_job_and_not_the_zygote_ever_holds_the_hosts_private_key(
        hosts: list[Host], pki: tuple[Path, Path], client_tls: ssl.SSLContext) -> None:
    from sandbox.tests.test_secrets import _SCAN_JOB, _needle, _process_memory_contains

    key = (pki[0] / "server-localhost.key").read_text().splitlines()[1]  # a line of the key's base64
    result = run_job(source=_SCAN_JOB, input={"key": _needle(key)}, limits=Limits(wall_seconds=20, cpu_seconds=15),
                     socket_path=hosts[0].endpoint, tls=client_tls)
    assert result.status == "ok" and result.result["regions"] > 0, result
    assert result.result["found"] == {"key": {"memory": False, "objects": False}}
    assert not _process_memory_contains(hosts[0].process.pid, key.encode())  # the zygote read no key
