"""The sandbox server: a zygote holding a warm torch that forks one prepared proxy per seat,
beside a torch-less sibling (sandbox/torchless.py) for jobs that must not have torch.

`serve()` runs it in the foreground (`python -m sandbox serve`);
`spawn_server()` starts it as a child process with an empty environment.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import signal
import socket
import sys
import tempfile
from dataclasses import dataclass, field, replace

from sandbox import backends, jail, linux, logs, network, proxies, torchless, warm
from sandbox.cgroups import CgroupTree, setup_cgroups
from sandbox.confine import Identity
from sandbox.context import HARDENED, ProxyContext, Seat, ServerContext
from sandbox.launch import DEFAULT_UID_BASE, running_server, spawn_server, stop_server
from sandbox.seccomp import SeccompFilter
from sandbox.zygote import SeatState, Zygote

__all__ = ["ServerConfig", "default_slots", "running_server", "seat_uid_count", "serve", "spawn_server",
           "stop_server"]
log = logging.getLogger("sandbox")
SEATS_PER_SLOT = 2  # one runs a job while the other is prepared for the next
_BACKLOG = 128


def default_slots() -> int:
    """One slot (concurrent job) per core available to us."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def seat_uid_count(slots: int) -> int:
    """Seat uids a server holds: two seats per slot, for the torch zygote and for its torch-less sibling."""
    return 2 * slots * SEATS_PER_SLOT


@dataclass(frozen=True)
class ServerConfig:
    socket_path: str
    slots: int = field(default_factory=default_slots)
    uid_base: int = DEFAULT_UID_BASE
    preload: tuple[str, ...] = ()
    package_dirs: tuple[str, ...] = ()
    backend: str = "auto"
    allow_insecure_dev_backend: bool = False
    socket_mode: int = 0o600
    socket_gid: int | None = None


@dataclass(frozen=True)
class Shared:
    """Set up once, before the torch-less sibling is forked, for both zygotes."""

    uids: list[int]
    seccomp: SeccompFilter | None
    cgroups: CgroupTree | None
    torch_dirs: tuple[str, ...]  # empty in the torch-less server's root


@dataclass
class Prepared:
    ctx: ServerContext
    seats: list[Seat]
    root_dir: str | None


def _package_dirs(config: ServerConfig, with_torch: bool) -> list[str]:
    """Listed package dirs, plus the directory of every preloaded package found outside them
    (also of a package whose modules need torch and are not imported by the torch-less server)."""
    dirs = [backends.validate_package_dir(path) for path in config.package_dirs]
    for path in dirs:
        sys.path.insert(0, os.path.dirname(path))
    warm.warm_up(config.preload, with_torch=with_torch)
    allowed = [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, *dirs)]
    for name in dict.fromkeys(module.partition(".")[0] for module in config.preload):
        spec = importlib.util.find_spec(name)  # expose whole packages, not subpackages
        if spec is None or not spec.origin:
            raise backends.BackendUnavailable(f"preloaded module {name} cannot be found")
        location = os.path.dirname(os.path.realpath(spec.origin))
        if not any(location == a or location.startswith(a + "/") for a in allowed):
            if spec.submodule_search_locations is None:
                raise backends.BackendUnavailable(
                    f"preloaded module {name} is a single file in {location}; "
                    "only package directories are exposed to jobs")
            dirs.append(backends.validate_package_dir(location))
    return dirs


def _root_plan(root_dir: str, dirs: list[str], hidden: tuple[str, ...], names: dict[str, str]) -> jail.RootPlan:
    venv = os.path.realpath(sys.prefix)  # its scripts and pyvenv.cfg name the venv's host path
    hidden += (os.path.join(venv, "bin"), os.path.join(venv, "pyvenv.cfg")) if venv in names else ()
    try:
        return jail.plan_root(root_dir, backends.allow_list(dirs), masked=[*backends.test_dirs(dirs), *hidden],
                              files=backends.system_libraries(), names=names)
    except ValueError as exc:
        raise backends.BackendUnavailable(str(exc)) from None


def share(config: ServerConfig, backend: str) -> Shared:
    """What both zygotes use: the seat uids (locked as long as either process lives), the seccomp
    filter and one cgroup tree with a seat for each."""
    uids = [config.uid_base + index for index in range(seat_uid_count(config.slots))]
    torch_dirs = backends.torch_dirs()
    if backend != HARDENED:
        return Shared(uids, None, None, torch_dirs)
    backends.claim_seat_uids(uids)
    from sandbox.seccomp import build_filter

    tree, description = setup_cgroups(str(os.getpid()), len(uids))
    log.info("%s", description)
    return Shared(uids, build_filter(), tree, torch_dirs)


def prepare(config: ServerConfig, backend: str, shared: Shared, seats: list[Seat], *, with_torch: bool) -> Prepared:
    """Everything one zygote does once: its preloads warm, allow-list and root."""
    sys.path.insert(0, backends.GUEST_DIR)
    import sandbox_guest  # noqa: F401 - preloaded so forked jobs need no file access

    dirs = _package_dirs(config, with_torch)
    hardened = backend == HARDENED
    root, root_dir, names = None, None, {}
    python, guest_dir = sys.executable, backends.GUEST_DIR
    if hardened:
        names = backends.jail_names(dirs)
        root_dir = tempfile.mkdtemp(prefix="sandbox-root-")
        root = _root_plan(root_dir, dirs, hidden=() if with_torch else shared.torch_dirs, names=names)
        python = jail.rename(os.path.realpath(sys.executable), names)  # the interpreter itself, not the venv's link
        guest_dir = names[os.path.realpath(backends.GUEST_DIR)]
    job_env = backends.job_environment(dirs, names=names)  # the development backend points HOME/TMPDIR at its work dir
    warm.freeze_heap()
    ctx = ServerContext(backend=backend, root=root, seccomp=shared.seccomp, data_base=warm.data_segment_bytes(),
                        job_env=job_env, python=python, guest_dir=guest_dir, torch=with_torch,
                        host_names=backends.host_path_names(names, dirs) if hardened else {})
    return Prepared(ctx, seats, root_dir)


def seats_of(config: ServerConfig, backend: str, shared: Shared, *, with_torch: bool) -> list[Seat]:
    """One zygote's seats: the torch-less server's come after the torch server's."""
    hardened = backend == HARDENED
    count = config.slots * SEATS_PER_SLOT
    first = 0 if with_torch else count
    return [Seat(index, Identity(shared.uids[index], shared.uids[index], switch=hardened, dedicated=hardened),
                 shared.cgroups.seats[index] if shared.cgroups else None) for index in range(first, first + count)]


def _listen(config: ServerConfig, path: str) -> socket.socket:
    if os.path.exists(path):
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as probe:
            probe.connect(path)
            raise backends.BackendUnavailable(f"another server is already listening on {path}")
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # the socket is never reachable by others, even briefly
    try:
        listener.bind(path)
    finally:
        os.umask(old_umask)
    if config.socket_gid is not None:
        os.chown(path, -1, config.socket_gid)
    os.chmod(path, config.socket_mode)
    listener.listen(_BACKLOG)
    return listener


def serve(config: ServerConfig) -> int:
    """Run the server in the foreground until SIGTERM/SIGINT; return the exit status."""
    logs.configure(sys.stderr)
    backend = backends.choose_backend(config.backend, config.allow_insecure_dev_backend)
    if backend != HARDENED:
        log.warning("INSECURE DEVELOPMENT BACKEND: rlimits only, no isolation. Never use it for real students.")
    shared = share(config, backend)
    sibling_config = replace(config, socket_path=torchless.socket_path(config.socket_path))
    sibling = torchless.start(lambda ready: _run_zygote(sibling_config, backend, shared, ready=ready))
    try:
        return _run_zygote(config, backend, shared, sibling=sibling)
    finally:
        torchless.stop(sibling)
        if shared.cgroups is not None:
            shared.cgroups.remove()


def _run_zygote(config: ServerConfig, backend: str, shared: Shared, *, ready: int | None = None,
                sibling: torchless.Sibling | None = None) -> int:
    """One zygote (with torch when it has a torch-less `sibling`, without when it reports `ready`)."""
    with_torch = sibling is not None
    seats = seats_of(config, backend, shared, with_torch=with_torch)
    spawner = proxies.start(seats, ProxyContext(backend=backend, torch=with_torch))  # before torch or preloads
    try:
        return _serve_prepared(config, backend, shared, seats, spawner, ready=ready, sibling=sibling)
    finally:
        if spawner.alive:  # the zygote failed before its loop; its drain stops the spawner otherwise
            spawner.stop()
            with contextlib.suppress(ChildProcessError):
                os.waitpid(spawner.pid, 0)


def _serve_prepared(config: ServerConfig, backend: str, shared: Shared, seats: list[Seat],
                    spawner: proxies.Spawner, *, ready: int | None, sibling: torchless.Sibling | None) -> int:
    prepared = prepare(config, backend, shared, seats, with_torch=sibling is not None)
    if sibling is not None:
        torchless.await_ready(sibling)  # when our socket answers, the sibling's does too
    status_path = config.socket_path + network.STATUS_SUFFIX  # answered by the accept loop, busy or not
    zygote = Zygote(_listen(config, config.socket_path), prepared.ctx, [SeatState(seat) for seat in prepared.seats],
                    config.slots, spawner, sibling=sibling.pid if sibling else None,
                    status_listener=_listen(config, status_path))
    if ready is not None:
        torchless.report_ready(ready)

    def stop(signum: int, frame: object) -> None:
        zygote.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    if sys.platform.startswith("linux"):
        linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)  # seat inits are handed to us by their helper
    seats = prepared.seats
    log.info("ready: backend=%s torch=%s slots=%d seats=%d uids=%d-%d socket=%s", backend,
             "yes" if prepared.ctx.torch else "no", config.slots, len(seats), seats[0].identity.uid,
             seats[-1].identity.uid, config.socket_path)
    try:
        zygote.run()
    finally:
        zygote.listener.close()
        if zygote.status_listener is not None:
            zygote.status_listener.close()
        for path in (config.socket_path, status_path):
            with contextlib.suppress(OSError):
                os.unlink(path)
        zygote.drain()
        if prepared.root_dir is not None:
            with contextlib.suppress(OSError):
                os.rmdir(prepared.root_dir)
    return 1 if zygote.sibling_lost or zygote.spawner_lost else 0
