"""The sandbox server: a zygote holding a warm torch that forks one prepared proxy per seat.

`serve()` runs it in the foreground (`python -m sandbox serve`);
`spawn_server()` starts it as a child process with an empty environment.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import tempfile
from dataclasses import dataclass, field

from sandbox import backends, jail, linux, warm
from sandbox.cgroups import CgroupTree, setup_cgroups
from sandbox.confine import Identity
from sandbox.context import HARDENED, Seat, ServerContext
from sandbox.launch import DEFAULT_UID_BASE, running_server, spawn_server, stop_server
from sandbox.zygote import SeatState, Zygote

__all__ = ["ServerConfig", "default_slots", "running_server", "serve", "spawn_server", "stop_server"]
log = logging.getLogger("sandbox")
SEATS_PER_SLOT = 2  # one runs a job while the other is prepared for the next
_BACKLOG = 128


def default_slots() -> int:
    """One slot (concurrent job) per core available to us."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


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


@dataclass
class Prepared:
    ctx: ServerContext
    seats: list[Seat]
    cgroups: CgroupTree | None
    root_dir: str | None


def _package_dirs(config: ServerConfig) -> list[str]:
    """Listed package dirs, plus the directory of every preloaded package found outside them."""
    dirs = [backends.validate_package_dir(path) for path in config.package_dirs]
    for path in dirs:
        sys.path.insert(0, os.path.dirname(path))
    for module in warm.warm_up(config.preload):
        top = sys.modules[module.__name__.partition(".")[0]]  # expose whole packages, not subpackages
        location = os.path.dirname(os.path.realpath(top.__file__ or ""))
        allowed = [os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, *dirs)]
        if not any(location == a or location.startswith(a + "/") for a in allowed):
            if not hasattr(top, "__path__"):
                raise backends.BackendUnavailable(
                    f"preloaded module {top.__name__} is a single file in {location}; "
                    "only package directories are exposed to jobs")
            dirs.append(backends.validate_package_dir(location))
    return dirs


def _root_plan(root_dir: str, dirs: list[str]) -> jail.RootPlan:
    try:
        return jail.plan_root(root_dir, backends.allow_list(dirs), masked=backends.test_dirs(dirs),
                              files=backends.system_libraries())
    except ValueError as exc:
        raise backends.BackendUnavailable(str(exc)) from None


def prepare(config: ServerConfig, backend: str) -> Prepared:
    """Everything done once: torch warm, allow-list, seccomp filter, cgroups, seat uids."""
    sys.path.insert(0, backends.GUEST_DIR)
    import sandbox_guest  # noqa: F401, PLC0415 - preloaded so forked jobs need no file access

    dirs = _package_dirs(config)
    hardened = backend == HARDENED
    count = config.slots * SEATS_PER_SLOT
    uids = [config.uid_base + index for index in range(count)]
    root, seccomp, tree, root_dir = None, None, None, None
    if hardened:
        backends.claim_seat_uids(uids)  # the locks live as long as this process
        from sandbox.seccomp import build_filter  # noqa: PLC0415

        seccomp = build_filter()
        root_dir = tempfile.mkdtemp(prefix="sandbox-root-")
        root = _root_plan(root_dir, dirs)
        tree, description = setup_cgroups(str(os.getpid()), count)
        log.info("%s", description)
    job_env = backends.job_environment(dirs)  # the development backend points HOME/TMPDIR at its work dir
    warm.freeze_heap()
    ctx = ServerContext(backend=backend, root=root, seccomp=seccomp, data_base=warm.data_segment_bytes(),
                        job_env=job_env, python=sys.executable, guest_dir=backends.GUEST_DIR,
                        torch_dirs=backends.torch_dirs())
    seats = [Seat(index, Identity(uid, uid, switch=hardened, dedicated=hardened),
                  tree.seats[index] if tree else None) for index, uid in enumerate(uids)]
    return Prepared(ctx, seats, tree, root_dir)


def _listen(config: ServerConfig) -> socket.socket:
    path = config.socket_path
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
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="sandbox[%(process)d] %(message)s")
    backend = backends.choose_backend(config.backend, config.allow_insecure_dev_backend)
    if backend != HARDENED:
        log.warning("INSECURE DEVELOPMENT BACKEND: rlimits only, no isolation. Never use it for real students.")
    prepared = prepare(config, backend)
    zygote = Zygote(_listen(config), prepared.ctx, [SeatState(seat) for seat in prepared.seats], config.slots)

    def stop(signum: int, frame: object) -> None:
        zygote.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    if sys.platform.startswith("linux"):
        linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)  # seat inits are handed to us by their helper
    log.info("ready: backend=%s slots=%d seats=%d uids=%d-%d socket=%s", backend, config.slots,
             len(prepared.seats), config.uid_base, config.uid_base + len(prepared.seats) - 1, config.socket_path)
    try:
        zygote.run()
    finally:
        zygote.listener.close()
        with contextlib.suppress(OSError):
            os.unlink(config.socket_path)
        zygote.drain()
        _cleanup(prepared)
    return 0


def _cleanup(prepared: Prepared) -> None:
    if prepared.cgroups is not None:
        prepared.cgroups.remove()
    if prepared.root_dir is not None:
        with contextlib.suppress(OSError):
            os.rmdir(prepared.root_dir)
