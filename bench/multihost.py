"""Multi-host drill on one machine: the production topology laid across Linux network namespaces.

    sudo .venv/bin/python bench/multihost.py                          # 1000 students, host 2 down 10 s
    sudo .venv/bin/python bench/multihost.py --students 60 --down 3   # the CI size (tests/test_multihost.py)

Namespaces on one bridge (each its own network stack, as separate hosts would be):
  proxy      a small Python TCP proxy (nginx is not installed here), round robin over the web replicas
  web-1/-2   gunicorn (config/gunicorn.py), SANDBOX_ENDPOINTS=none: web runs no sandbox job
  host-1/-2  a worker host: a sandbox server listening with mutual TLS on port 7000, and one Celery pool
             per lane (numeric, code, maintenance; beat on host 1) reaching that sandbox over TLS
PostgreSQL and Redis are private instances (PostgreSQL as in bench/chaos.py --postgres) listening on
the bridge's address in the root namespace, where the drill itself drives the students through the
proxy. The certificates come from deploy/make-secrets.sh.

Three bursts of students (70 % numeric, 30 % code): (A) both worker hosts up; (B) worker host 2 is
killed whole (its workers and its sandbox, SIGKILL) one second in, and brought back after --down
seconds; (C) after it is back. Printed: the graded/s with two hosts (A) and with one (B, while host
2 was down), recovery times (a probe made right after the kill graded; host 2's restart until its
sandbox ran a job again), then `N lost, N doubled` over every submission (exit status 1 unless both
are 0). Namespaces, links and processes are removed on exit, on Ctrl-C and on SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stack import LOGS, ROOT, PrivatePostgres, PrivateRedis, stop, wait_until

IP = shutil.which("ip") or "/usr/sbin/ip"
NSENTER = shutil.which("nsenter") or "/usr/bin/nsenter"
SANDBOX_PORT, WEB_PORT, PROXY_PORT = 7000, 8000, 8080
WARM_UP = 8  # students who submit first, uncounted in the throughputs (the first requests of a process are slow)


def unavailable_reason() -> str | None:
    """Why the drill cannot run here (None when it can)."""
    if os.geteuid() != 0:
        return "it needs root (network namespaces, a bridge, the hardened sandbox)"
    probe = subprocess.run([IP, "netns", "list"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"`ip netns` is unavailable: {probe.stderr.strip()[:200]}"
    if not shutil.which("nsenter"):
        return "nsenter (util-linux) is not installed"
    if not shutil.which("pg_ctl") and not Path("/usr/lib/postgresql/bin/pg_ctl").exists():
        return "PostgreSQL's pg_ctl is not installed"
    if not shutil.which("redis-server"):
        return "redis-server is not installed"
    return None


def run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, text=True)


class Network:
    """A bridge in the root namespace and one namespace per host, each on a veth pair."""

    def __init__(self) -> None:
        self.tag = secrets.token_hex(2)
        self.subnet = f"10.77.{int(self.tag, 16) % 250 + 1}"
        self.bridge = f"mh{self.tag}br"
        self.gateway = f"{self.subnet}.1"  # the root namespace: the drill, PostgreSQL, Redis
        self.namespaces: dict[str, str] = {}  # role -> namespace
        self.addresses: dict[str, str] = {}

    def create(self, roles: list[str]) -> None:
        run(IP, "link", "add", self.bridge, "type", "bridge")
        run(IP, "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        run(IP, "link", "set", self.bridge, "up")
        for index, role in enumerate(roles, start=10):
            namespace, outer, inner = f"mh{self.tag}-{role}", f"mh{self.tag}o{index}", f"mh{self.tag}i{index}"
            run(IP, "netns", "add", namespace)
            self.namespaces[role] = namespace
            run(IP, "link", "add", outer, "type", "veth", "peer", "name", inner)
            run(IP, "link", "set", inner, "netns", namespace)
            run(IP, "link", "set", outer, "master", self.bridge, "up")
            address = f"{self.subnet}.{index}"
            run(IP, "-n", namespace, "addr", "add", f"{address}/24", "dev", inner)
            run(IP, "-n", namespace, "link", "set", inner, "up")
            run(IP, "-n", namespace, "link", "set", "lo", "up")
            self.addresses[role] = address

    def remove(self) -> None:
        for namespace in self.namespaces.values():
            subprocess.run([IP, "netns", "del", namespace], capture_output=True)  # its veth ends go with it
        subprocess.run([IP, "link", "del", self.bridge], capture_output=True)

    def command(self, role: str, argv: list[str]) -> list[str]:
        """Only the network namespace changes (`ip netns exec` would also remount /sys, and with it the
        cgroup tree the sandbox builds its seats in)."""
        return [NSENTER, f"--net=/run/netns/{self.namespaces[role]}", *argv]


class BridgedPostgres(PrivatePostgres):
    """The drill's PostgreSQL, listening on the bridge so that every namespace reaches it."""

    def __init__(self, address: str) -> None:
        super().__init__()
        self.address = address

    @property
    def url(self) -> str:
        return f"postgres://drill@{self.address}:{self.port}/postgres"

    def create(self) -> None:
        for path in (self.home, self.data, self.sockets):
            path.mkdir(exist_ok=True)
            if self.user:
                shutil.chown(path, self.user)
        self._run("initdb", "-D", str(self.data), "-U", "drill", "--auth=trust", "--no-sync")
        with open(self.data / "pg_hba.conf", "a", encoding="utf-8") as hba:
            hba.write(f"host all all {self.address.rsplit('.', 1)[0]}.0/24 trust\n")  # the drill's hosts only
        options = (f"-p {self.port} -k {self.sockets} -c listen_addresses={self.address} -c fsync=off "
                   "-c max_connections=300")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.data / "server.log"), "-w", "start")


class BridgedRedis(PrivateRedis):
    """The drill's Redis on the bridge, with a password as in production."""

    def __init__(self, address: str) -> None:
        super().__init__()
        self.address, self.password = address, secrets.token_urlsafe(16)

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@{self.address}:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.proc = subprocess.Popen([binary, "--port", str(self.port), "--bind", self.address, "--save", "",
                                      "--appendonly", "no", "--requirepass", self.password],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        wait_until(lambda: _open(self.address, self.port), "private redis", 20, self.proc)


def _open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((host, port)) == 0


@dataclass
class Topology:
    network: Network
    env: dict[str, str]  # what every web and worker process reads
    tls: Path  # deploy/make-secrets.sh's sandbox-tls directory
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    restarted_at: float = 0.0

    def spawn(self, name: str, role: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        LOGS.mkdir(exist_ok=True)
        with open(LOGS / f"multihost-{name}.log", "ab") as out:
            proc = subprocess.Popen(self.network.command(role, argv), cwd=ROOT, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def endpoint(self, host: str) -> str:
        return f"tls://{self.network.addresses[host]}:{SANDBOX_PORT}"

    def start_proxy(self) -> None:
        backends = [f"{self.network.addresses[web]}:{WEB_PORT}" for web in ("web-1", "web-2")]
        self.spawn("proxy", "proxy", [sys.executable, "bench/multihost.py", "--proxy", str(PROXY_PORT), *backends],
                   {"PATH": os.environ.get("PATH", "")})

    def start_web(self, role: str) -> None:
        self.spawn(role, role, [sys.executable, "-m", "gunicorn", "config.wsgi", "-c", "config/gunicorn.py",
                                "-b", f"0.0.0.0:{WEB_PORT}", "--log-level", "warning"],
                   {**self.env, "SANDBOX_ENDPOINTS": "none"})

    def start_host(self, host: str) -> None:
        """The sandbox (an empty environment, as in production), then one pool per lane."""
        from grading.reference import SANDBOX_PRELOAD
        from sandbox.backends import BackendUnavailable, claim_seat_uids
        from sandbox.client import SandboxError, status
        from sandbox.network import TlsFiles, client_context
        from sandbox.server import seat_uid_count

        address, socket_path = self.network.addresses[host], str(Path(self.env["DRILL_DIR"]) / f"{host}.sock")
        base = next(b for b in range(63500, 65000, 16) if _free(claim_seat_uids, BackendUnavailable,
                                                                  range(b, b + seat_uid_count(1))))
        argv = [sys.executable, "-m", "sandbox", "serve", "--socket", socket_path, "--slots", "1",
                "--uid-base", str(base), "--package-dir", str(ROOT / "chainrule"),
                *[arg for module in SANDBOX_PRELOAD for arg in ("--preload", module)],
                "--listen", f"{address}:{SANDBOX_PORT}", "--tls-ca", str(self.tls / "ca.crt"),
                "--tls-cert", str(self.tls / f"server-{address}.crt"),
                "--tls-key", str(self.tls / f"server-{address}.key")]
        sandbox = self.spawn(f"{host}-sandbox", host, argv, {})
        client = client_context(TlsFiles(str(self.tls / "ca.crt"), str(self.tls / "client.crt"),
                                         str(self.tls / "client.key")))

        def answers() -> bool:
            with contextlib.suppress(SandboxError):
                return bool(status(socket_path=self.endpoint(host), tls=client, timeout=2))
            return False

        wait_until(answers, f"{host}'s sandbox over TLS", 180, sandbox)
        env = {**self.env, "SANDBOX_ENDPOINTS": self.endpoint(host)}
        queue = self.env["CELERY_QUEUE"]
        lanes = {"numeric": [queue, "--pool", "prefork", "-c", "1"],
                 "code": [f"{queue}-code", "--pool", "threads", "-c", "2"],
                 "maintenance": [f"{queue}-maintenance,{queue}-lms", "--pool", "prefork", "-c", "1"]}
        for lane, options in lanes.items():
            beat = ["--beat", "--schedule", str(Path(self.env["DRILL_DIR"]) / "beat-schedule")] \
                if lane == "maintenance" and host == "host-1" else []
            self.spawn(f"{host}-{lane}", host, [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q",
                                                 *options, *beat, "-n", f"{lane}-{host}-{secrets.token_hex(3)}@%h",
                                                 "--without-gossip", "--without-mingle", "--loglevel", "WARNING"],
                       env)

    def kill_host(self, host: str) -> None:
        """The whole host at once, as a power cut: its workers and its sandbox, SIGKILL."""
        for name in [n for n in self.procs if n.startswith(f"{host}-")]:
            stop(self.procs.pop(name), signal.SIGKILL)

    def sandbox_jobs_since(self, host: str, since: float) -> list[float]:
        """Times (epoch) of the jobs host's sandbox logged after `since`."""
        times = []
        for line in (LOGS / f"multihost-{host}-sandbox.log").read_text(errors="replace").splitlines():
            if line.startswith("{") and '"seat ' in line:
                entry = json.loads(line)
                when = datetime.fromisoformat(entry["time"]).timestamp()
                if when >= since and " in " in entry.get("message", ""):
                    times.append(when)
        return times

    def close(self) -> None:
        for name in list(self.procs):
            stop(self.procs.pop(name))


def _free(claim: object, refused: type[Exception], uids: range) -> bool:
    try:
        for fd in claim(list(uids)):  # type: ignore[operator]
            os.close(fd)
    except refused:
        return False
    return True


def proxy(port: int, backends: list[str]) -> None:
    """A TCP proxy, round robin over the backends, skipping one that refuses (no buffering)."""
    targets = [(host, int(p)) for host, _, p in (b.rpartition(":") for b in backends)]
    turn = itertools.count()
    server = socket.create_server(("0.0.0.0", port), backlog=1024)

    def pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def handle(client: socket.socket) -> None:
        first = next(turn)
        for n in range(len(targets)):
            try:
                upstream = socket.create_connection(targets[(first + n) % len(targets)], timeout=2)
                break
            except OSError:
                continue
        else:
            client.close()
            return
        upstream.settimeout(None)
        back = threading.Thread(target=pipe, args=(upstream, client), daemon=True)
        back.start()
        pipe(client, upstream)
        back.join()
        client.close()
        upstream.close()

    while True:
        conn, _ = server.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM cleans up as Ctrl-C does


@contextlib.contextmanager
def topology(workdir: Path) -> Iterator[Topology]:
    """Everything up; everything removed on the way out (also on Ctrl-C and SIGTERM)."""
    signal.signal(signal.SIGTERM, _interrupted)
    network = Network()
    postgres = redis = None
    topo: Topology | None = None
    try:
        network.create(["proxy", "web-1", "web-2", "host-1", "host-2"])
        hosts = [network.addresses["host-1"], network.addresses["host-2"]]
        subprocess.run(["sh", str(ROOT / "deploy" / "make-secrets.sh")], check=True, capture_output=True,
                       env={**os.environ, "SECRETS_DIR": str(workdir / "secrets"), "SANDBOX_HOSTS": " ".join(hosts)})
        tls = workdir / "secrets" / "sandbox-tls"
        postgres, redis = BridgedPostgres(network.gateway), BridgedRedis(network.gateway)
        postgres.create()
        redis.start()
        env = {**os.environ, "DATABASE_URL": postgres.url, "REDIS_URL": redis.url, "CELERY_BROKER_URL": redis.url,
               "CELERY_QUEUE": f"multihost-{network.tag}", "DEBUG": "0", "SECURE_COOKIES": "0",
               "LOG_LEVEL": "WARNING", "LOG_FORMAT": "text", "GRADER_RATE_LIMIT": "0", "GRADER_SWEEP_EVERY": "3",
               "GRADER_SWEEP_QUEUED_AFTER": "5", "GRADER_SWEEP_RUNNING_AFTER": "20", "DRILL_DIR": str(workdir),
               "SECRET_KEY": "multihost-drill-" + secrets.token_hex(16), "WEB_WORKERS": "1",
               "ALLOWED_HOSTS": network.addresses["proxy"], "SANDBOX_TLS_CA_FILE": str(tls / "ca.crt"),
               "SANDBOX_TLS_CERT_FILE": str(tls / "client.crt"), "SANDBOX_TLS_KEY_FILE": str(tls / "client.key")}
        env.pop("SANDBOX_SOCKET", None)
        topo = Topology(network, env, tls)
        yield topo
    finally:
        if topo is not None:
            topo.close()
        if redis is not None:
            redis.kill()
        if postgres is not None:
            with contextlib.suppress(Exception):
                from django.db import connections

                connections.close_all()
            postgres.remove()
        network.remove()


def setup_django(topo: Topology) -> None:
    """The drill's own process (root namespace): the release step's job, students, the final count."""
    os.environ.update({k: v for k, v in topo.env.items() if k != "SANDBOX_ENDPOINTS"})
    os.environ["SANDBOX_ENDPOINTS"] = f"{topo.endpoint('host-1')} {topo.endpoint('host-2')}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def graded_rate(ids: list[int], start: float, end: float) -> tuple[float, int]:
    """Graded per second within [start, end] (epoch), over the part of it the backlog lasted."""
    from grader.models import Submission

    stamps = sorted(t.timestamp() for t in Submission.objects.filter(id__in=ids, status="graded")
                    .values_list("graded_at", flat=True) if start <= t.timestamp() <= end)
    if not stamps:
        return 0.0, 0
    return len(stamps) / max(stamps[-1] - start, 1e-3), len(stamps)


def drill(args: argparse.Namespace) -> int:
    from chaos import _probe_graded
    from load import load_window, report, students_create, verify

    with tempfile.TemporaryDirectory(prefix="multihost-") as tmp, topology(Path(tmp)) as topo:
        setup_django(topo)
        for name in ("host-1", "host-2"):
            topo.start_host(name)
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        call_command("load_assignments", verbosity=0)  # the release step: references run on the hosts over TLS
        for web in ("web-1", "web-2"):
            topo.start_web(web)
        topo.start_proxy()
        url = f"http://{topo.network.addresses['proxy']}:{PROXY_PORT}"
        for web in ("web-1", "web-2"):
            wait_until(functools.partial(_open, topo.network.addresses[web], WEB_PORT), web, 120, topo.procs[web])
        wait_until(lambda: _open(topo.network.addresses["proxy"], PROXY_PORT), "proxy", 30, topo.procs["proxy"])
        time.sleep(3)  # the workers import torch; what is submitted meanwhile waits on the queue
        print(f"multihost drill: {args.students} students through {url} (a Python TCP proxy), 2 web replicas, "
              f"2 worker hosts with a sandbox each over mutual TLS, PostgreSQL and Redis on {topo.network.gateway}",
              flush=True)
        counts = [int(args.students * 0.35), int(args.students * 0.35)]
        counts.append(args.students - sum(counts))
        everyone = students_create(args.students + WARM_UP + 2, with_password=False)
        probes, groups = everyone[-2:], [everyone[:counts[0]], everyone[counts[0]:sum(counts[:2])],
                                         everyone[sum(counts[:2]):args.students]]
        warm_up = everyone[args.students:args.students + WARM_UP]
        ids = load_window(url, warm_up, seconds=0, code_share=0.5, login="token", senders=4).ids  # warm processes
        verify(ids, warm_up)

        started = time.time()
        outcome = load_window(url, groups[0], seconds=0, code_share=0.3, login="token")
        ids += outcome.ids
        phase_a = verify(outcome.ids, groups[0])
        report("A, two worker hosts", outcome, phase_a, len(groups[0]))

        recovery: dict[str, float] = {}

        def fault() -> None:
            time.sleep(args.kill_after)
            killed = time.time()
            recovery["killed"] = killed
            topo.kill_host("host-2")
            print("  fault: worker host 2 killed (its sandbox and its 3 worker pools, SIGKILL)", flush=True)
            recovery["probe"] = _probe_graded(url, probes[0], "code")
            time.sleep(max(0.0, killed + args.down - time.time()))
            recovery["restarted"] = time.time()
            topo.start_host("host-2")
            recovery["up"] = time.time()

        chaos = threading.Thread(target=fault)
        chaos.start()
        outcome_b = load_window(url, groups[1], seconds=0, code_share=0.3, login="token")
        chaos.join()
        ids += outcome_b.ids
        one_host, graded_one = graded_rate(outcome_b.ids, recovery["killed"], recovery["restarted"])

        back = time.time()
        outcome_c = load_window(url, groups[2], seconds=0, code_share=0.3, login="token")
        ids += outcome_c.ids
        deadline = time.monotonic() + 120
        while not topo.sandbox_jobs_since("host-2", recovery["restarted"]) and time.monotonic() < deadline:
            _probe_graded(url, probes[1], "code")  # code probes until host 2's workers take one
        verdict = verify(ids, [*warm_up, *groups[0], *groups[1], *groups[2]], timeout=300)
        jobs = topo.sandbox_jobs_since("host-2", recovery["restarted"])
        for later in (outcome_b, outcome_c):  # the three bursts as one
            outcome.ids += later.ids
            outcome.errors += later.errors
            outcome.retries += later.retries
            outcome.submit_s += later.submit_s
        report(f"all {args.students} (A, B, C) and {WARM_UP} warming up", outcome, verdict, args.students)
        print(f"\nthroughput: two worker hosts {phase_a.throughput:.1f} graded/s (burst A); one worker host "
              f"{one_host:.1f} graded/s ({graded_one} graded while host 2 was down)")
        print(f"recovery: a code probe submitted right after the kill was graded in {recovery['probe']:.1f} s; "
              f"host 2 restarted: its sandbox answered over TLS {recovery['up'] - recovery['restarted']:.1f} s "
              "later" + (f", and ran a job again {min(jobs) - recovery['restarted']:.1f} s after the restart"
                         if jobs else ", but ran no job within 120 s"))
        print(f"bursts took {back - started:.0f} s (A and B) and {time.time() - back:.0f} s (C and the count)")
        print(f"multihost verdict: {verdict.lost} lost, {verdict.doubled} doubled, {verdict.errored} infrastructure "
              f"errors, {verdict.redelivered} redelivered and graded once")
        return 1 if verdict.lost or verdict.doubled else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--students", type=int, default=1000)
    p.add_argument("--down", type=float, default=10.0, help="seconds worker host 2 stays down")
    p.add_argument("--kill-after", type=float, default=1.0, help="seconds into burst B when host 2 is killed")
    p.add_argument("--proxy", nargs="+", metavar=("PORT", "BACKEND"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.proxy:
        proxy(int(args.proxy[0]), args.proxy[1:])
        return 0
    reason = unavailable_reason()
    if reason:
        print(f"multihost drill: not run: {reason}", file=sys.stderr)
        return 2
    return drill(args)


if __name__ == "__main__":
    sys.exit(main())
