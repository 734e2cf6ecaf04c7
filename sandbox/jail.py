"""The job's private root, built by the job's init inside fresh namespaces.

Layout seen by the job:
    /python /venv /packages/<name> /guest
                                 the interpreter, the venv, the listed packages and sandbox_guest under
                                 neutral names (`names`), each an overlay whose only layer is the host
                                 directory: /proc/self/mountinfo shows "overlay", never the host path
    /<other allow-listed paths>  read-only, nosuid, nodev, at their host paths (system libraries, locale)
    /job  /tmp  /dev/shm         one size- and inode-limited tmpfs owned by the seat uid
    /proc                        a fresh proc for the seat's PID namespace showing only the job's own
                                 process (subset=pid, hidepid); on kernels before 5.8 the whole proc
                                 with every host-wide file masked
    /dev/{null,zero,full,random,urandom}
Nothing else of the host exists: no /etc, no /home, no project directory, no sockets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sandbox import linux
from sandbox.limits import MIB, Limits

_DEVICES = ("null", "zero", "full", "random", "urandom")
_RO = linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV
_JOB_FS_FLAGS = linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC
_NAMESPACES = (linux.CLONE_NEWNS | linux.CLONE_NEWNET | linux.CLONE_NEWIPC
               | linux.CLONE_NEWUTS | linux.CLONE_NEWCGROUP)
WORK_DIR = "/job"
RESERVED = (WORK_DIR, "/dev", "/proc")  # the jail provides these itself
_TMP = "/tmp"  # also per job; host paths under it (a checkout in /tmp) are re-exposed per job
_HELD = "/.held"  # where binds of host paths under /tmp wait in the root, between jobs
_STAGING = "/.jobfs"  # empty mount point in the read-only root, used while building a job tmpfs
_JOB_MOUNTS = ((WORK_DIR, "work"), ("/tmp", "tmp"), ("/dev/shm", "shm"))


@dataclass(frozen=True)
class RootPlan:
    """Computed once in the zygote; applied per job by the init."""

    mount_point: str  # empty host directory the new root is mounted on
    binds: tuple[str, ...]  # absolute host directories mirrored read-only
    symlinks: tuple[tuple[str, str], ...]  # (path, target) recreated as on the host
    masked: tuple[str, ...] = ()  # directories inside binds that jobs see empty (a package's tests)
    files: tuple[tuple[str, str], ...] = ()  # (path in the jail, host file) single files, e.g. libraries
    names: tuple[tuple[str, str], ...] = ()  # (host directory, its neutral path in the jail)

    def jail_path(self, path: str) -> str:
        """Where a host path is found in the jail (the same path unless it lies under a renamed directory)."""
        return rename(path, self.names)

    @property
    def held(self) -> tuple[str, ...]:
        """Binds under /tmp: the job's fresh /tmp would hide them, so each job gets them again."""
        renamed = dict(self.names)
        return tuple(path for path in self.binds if _under(path, _TMP) and path not in renamed)


def rename(path: str, names: tuple[tuple[str, str], ...] | dict[str, str]) -> str:
    """`path` with its longest renamed leading directory replaced by that directory's new name."""
    pairs = names.items() if isinstance(names, dict) else names
    best = max((host for host, _ in pairs if _under(path, host)), key=len, default=None)
    if best is None:
        return path
    return dict(pairs)[best] + path[len(best):] if best != "/" else path


def plan_root(mount_point: str, paths: list[str], masked: list[str] | None = None,
              files: list[str] | None = None, names: dict[str, str] | None = None) -> RootPlan:
    """Mirror each allow-listed path; top-level symlinks (/lib -> usr/lib) stay symlinks.
    `masked` directories or files (inside those paths, also a checkout under /tmp) are empty for jobs;
    each of `files` (a library as the loader names it) is bound alone, its content at that path.
    A directory in `names` (host real path -> jail path) appears at that neutral path instead."""
    names = {os.path.realpath(host): jailed for host, jailed in (names or {}).items()}
    binds: dict[str, None] = {}
    symlinks: dict[str, str] = {}
    for path in map(os.path.abspath, paths):
        if os.path.islink(path):
            if os.path.realpath(path) not in names:  # a renamed directory keeps no trace of its host path
                symlinks[path] = os.readlink(path)
            path = os.path.realpath(path)
        if os.path.isdir(path):
            binds[path] = None
    nested = [b for b in binds if any(b != o and b.startswith(o + "/") for o in binds)]
    for path in nested:
        del binds[path]  # already visible through an enclosing bind
    for path in [*(names.get(b, b) for b in binds), *symlinks]:
        clash = next((r for r in RESERVED if _under(path, r)), None)
        if clash or path == _TMP or ((path in symlinks or path in names.values()) and _under(path, _TMP)):
            raise ValueError(f"cannot expose {path} to jobs: {clash or _TMP} is private to each job")
    renamed = tuple(sorted((host, jailed) for host, jailed in names.items() if host in binds))
    hidden = tuple(sorted({rename(os.path.realpath(path), renamed) for path in masked or []
                           if os.path.exists(path)}))
    single: dict[str, str] = {}
    for path in map(os.path.abspath, files or []):
        top = "/" + path.strip("/").split("/")[0]
        if os.path.islink(top):  # /lib64 -> usr/lib64: the loader's path goes through it
            symlinks[top] = os.readlink(top)
        target = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        if os.path.isfile(path) and not any(_under(target, b) for b in binds) and not _under(target, _TMP):
            single[target] = os.path.realpath(path)
    return RootPlan(mount_point, tuple(sorted(binds)), tuple(sorted(symlinks.items())), hidden,
                    tuple(sorted(single.items())), renamed)


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def _inside(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def _bind(source: str, target: str, flags: int = _RO, recursive: bool = False) -> None:
    linux.mount(source, target, None, linux.MS_BIND | (linux.MS_REC if recursive else 0))
    linux.mount(None, target, None, linux.MS_REMOUNT | linux.MS_BIND | flags)


def _overlay(source: str, target: str, empty: str) -> None:
    """Show the host directory `source` at `target` through a read-only overlay (its layers: `source`
    and an empty directory). Unlike a bind mount, whose mountinfo line names the host directory, it
    appears as the root of an "overlay" whose layers are given as descriptors, not as paths."""
    layers = [os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) for path in (source, empty)]
    try:
        lower = ":".join(f"/proc/self/fd/{fd}" for fd in layers)
        linux.mount("overlay", target, "overlay", _RO, f"lowerdir={lower}")
    finally:
        for fd in layers:
            os.close(fd)


def fresh_job_fs(uid: int, gid: int, held: tuple[str, ...] = ()) -> None:
    """Replace /job, /tmp and /dev/shm with one new, empty tmpfs (so one quota covers all).

    Runs in the init between jobs: nothing a job wrote survives into the next one.
    It starts tiny; `size_job_fs` applies the next job's limits once they are known.
    """
    os.chdir("/")  # a working directory inside the old tmpfs would keep it alive
    for target, _ in _JOB_MOUNTS:
        try:
            linux.umount(target)
        except OSError:
            pass  # nothing mounted yet (first job)
    inodes = 16 + sum(path.count("/") for path in held)  # room for the mount points of held paths
    linux.mount("tmpfs", _STAGING, "tmpfs", _JOB_FS_FLAGS, f"size=64k,nr_inodes={inodes},mode=0755")
    for target, name in _JOB_MOUNTS:
        os.mkdir(os.path.join(_STAGING, name), 0o700)
        os.chown(os.path.join(_STAGING, name), uid, gid)
        linux.mount(os.path.join(_STAGING, name), target, None, linux.MS_BIND)
    linux.umount(_STAGING)
    for path in held:  # read-only binds; a job may rename their parent dirs in its own /tmp, which
        os.makedirs(path, exist_ok=True)  # only breaks that job: /tmp is rebuilt for the next one
        _bind(_HELD + path, path, recursive=True)  # with the masks mounted inside the held copy
    os.chdir(WORK_DIR)  # the student process inherits it


def _populate_dev(root: str) -> None:
    dev = _inside(root, "/dev")
    os.makedirs(dev, exist_ok=True)
    for name in _DEVICES:
        node = os.path.join(dev, name)
        open(node, "w").close()
        _bind(f"/dev/{name}", node, linux.MS_NOSUID | linux.MS_NOEXEC)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, os.path.join(dev, name))


def size_job_fs(limits: Limits) -> None:
    """Remount the (still empty) job tmpfs with this job's size and inode limits."""
    options = f"size={limits.file_mb * MIB},nr_inodes={limits.max_files}"
    linux.mount(None, WORK_DIR, None, linux.MS_REMOUNT | _JOB_FS_FLAGS, options)


def enter(plan: RootPlan) -> None:
    """Unshare mount/net/IPC/UTS/cgroup namespaces and pivot into a fresh private root.

    Must run as root in the process that is PID 1 of the seat's new PID
    namespace, so the /proc mounted here shows only the seat's processes.
    """
    linux.unshare(_NAMESPACES)
    linux.sethostname("sandbox")
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)  # nothing propagates to the host
    root = plan.mount_point
    linux.mount("tmpfs", root, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "size=1m,nr_inodes=4096,mode=0755")
    os.makedirs(_inside(root, _STAGING))
    renamed = dict(plan.names)
    for path in plan.binds:
        target = _inside(root, renamed.get(path) or (_HELD + path if path in plan.held else path))
        os.makedirs(target, exist_ok=True)
        if path in renamed:
            _overlay(path, target, _inside(root, _STAGING))
        else:
            _bind(path, target)
    for target, source in plan.files:
        os.makedirs(os.path.dirname(_inside(root, target)), exist_ok=True)
        open(_inside(root, target), "w").close()
        _bind(source, _inside(root, target))
    for path in plan.masked:  # e.g. chainrule/tests: the seed programs and their answers
        held = any(_under(path, top) for top in plan.held)  # masked in the held copy, carried along per job
        target = _inside(root, _HELD + path if held else path)
        if os.path.isdir(target):
            linux.mount("tmpfs", target, "tmpfs", _RO | linux.MS_NOEXEC, "size=4k,nr_inodes=1,mode=0555")
        else:  # a file that names host paths (a venv's pyvenv.cfg): empty
            _bind("/dev/null", target, _RO | linux.MS_NOEXEC)
    for path, target in plan.symlinks:
        os.makedirs(os.path.dirname(_inside(root, path)), exist_ok=True)
        os.symlink(target, _inside(root, path))
    for path in [_STAGING, *(target for target, _ in _JOB_MOUNTS)]:
        os.makedirs(_inside(root, path), exist_ok=True)
    _populate_dev(root)
    if not _mount_proc(root):
        _mask_host_counters(root)
    _pivot(root)


def job_proc() -> None:
    """In a job's own PID namespace (its first process, root): a /proc mounted for that namespace
    over the seat's, so the job's process ids are its own, from 1. Not a mount namespace of its own:
    tearing one down when the job ends waits for an RCU grace period (tens of ms on a busy host),
    on the job's path; the seat's init detaches this /proc between jobs (`drop_job_proc`) instead."""
    frozen = os.open("/proc/cpuinfo", os.O_RDONLY) if os.path.exists("/proc/cpuinfo") else -1
    try:
        if not _mount_proc("/"):  # older kernels: the seat's masks again, its frozen cpuinfo bound over
            _mask_host_counters("/", cpuinfo=f"/proc/self/fd/{frozen}" if frozen >= 0 else None)
    finally:
        if frozen >= 0:
            os.close(frozen)


def drop_job_proc(seat_proc: int) -> None:
    """Between jobs, in the seat's init: detach the last job's /proc (and its masks), if any;
    `seat_proc` is the device of the seat's own."""
    if os.stat("/proc").st_dev != seat_proc:
        linux.umount("/proc")


def _mount_proc(root: str) -> bool:
    """A fresh procfs of the seat's PID namespace (other users' processes invisible) that shows only
    processes (`subset=pid`, Linux 5.8+): none of the host-wide files a PID namespace does not
    virtualise exist in it. False when the kernel refuses that option: then the whole procfs is
    mounted, and `_mask_host_counters` hides them one by one."""
    target = _inside(root, "/proc")
    os.makedirs(target, exist_ok=True)
    flags = linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC
    try:
        linux.mount("proc", target, "proc", flags, "hidepid=invisible,subset=pid")
        return True
    except OSError:
        linux.mount("proc", target, "proc", flags, "hidepid=invisible")
        return False


# Host-wide files a PID namespace does not virtualise: the host's CPU and memory use, load, boot
# command line, uptime and devices (a side channel on other jobs' bursts). Each becomes /dev/null.
MASKED_PROC_FILES = ("stat", "loadavg", "meminfo", "cmdline", "uptime", "vmstat", "diskstats", "swaps",
                     "interrupts", "softirqs", "schedstat", "zoneinfo", "buddyinfo", "slabinfo", "pagetypeinfo",
                     "partitions", "kallsyms", "modules", "iomem", "ioports", "keys", "key-users", "timer_list",
                     "sched_debug", "sysrq-trigger", "latency_stats", "locks", "mounts", "mountinfo", "kmsg",
                     "kpagecount", "kpageflags", "version", "misc", "consoles", "devices")
MASKED_PROC_DIRS = ("pressure", "sys", "acpi", "scsi", "irq", "bus", "fs", "driver", "tty", "sysvipc", "net")
# /proc/cpuinfo cannot be empty: torch's CPU detection (cpuinfo) in a freshly started python finds
# no processor in it and crashes on its first kernel. Jobs get a fixed copy taken when the seat is
# built, without the one field that moves with the host's load, each core's current clock.
_LIVE_CPUINFO_FIELDS = ("cpu MHz",)


def _mask_host_counters(root: str, cpuinfo: str | None = None) -> None:
    proc = _inside(root, "/proc")
    if cpuinfo is None:
        _freeze_cpuinfo(root, proc)
    else:  # a job's own procfs: the seat's frozen copy
        _bind(cpuinfo, os.path.join(proc, "cpuinfo"), _RO | linux.MS_NOEXEC)
    for name in MASKED_PROC_FILES:
        path = os.path.join(proc, name)
        if os.path.isfile(path) and not os.path.islink(path):
            _bind("/dev/null", path, linux.MS_NOSUID | linux.MS_NOEXEC)
    for name in MASKED_PROC_DIRS:
        path = os.path.join(proc, name)
        if os.path.isdir(path) and not os.path.islink(path):
            linux.mount("tmpfs", path, "tmpfs", _RO | linux.MS_NOEXEC, "size=4k,nr_inodes=1,mode=0555")


def _freeze_cpuinfo(root: str, proc: str) -> None:
    """Bind a static copy of /proc/cpuinfo, minus its live fields, over the jail's."""
    with open(os.path.join(proc, "cpuinfo")) as live:
        lines = [line for line in live if not line.startswith(_LIVE_CPUINFO_FIELDS)]
    snapshot = _inside(root, "/.cpuinfo")
    with open(snapshot, "w") as frozen:
        frozen.writelines(lines)
    _bind(snapshot, os.path.join(proc, "cpuinfo"), _RO | linux.MS_NOEXEC)
    os.unlink(snapshot)  # the bind keeps the copy; the root shows no extra file


def _pivot(root: str) -> None:
    old = _inside(root, ".old-root")
    os.mkdir(old)
    linux.pivot_root(root, old)
    os.chdir("/")
    linux.umount("/.old-root")  # detach: the host's tree is gone from this namespace
    os.rmdir("/.old-root")
    linux.mount(None, "/", None, linux.MS_REMOUNT | linux.MS_BIND | _RO)
    os.chdir(WORK_DIR)
