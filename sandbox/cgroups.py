"""Per-seat cgroups: memory and pids limits (plus a one-core CPU share) when the host offers them.

The server creates `sandbox-<tag>/seat-<n>` under its *own* cgroup, so it
works wherever it is delegated a subtree: cgroup v2 (unified) or v1 (one
hierarchy per controller, as on this host). Each seat's init joins its seat's
cgroups before anything else runs; the proxy sets the limits beforehand and
reads the OOM-kill counter afterwards, which the job cannot forge.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from sandbox.limits import MIB, Limits

_CPU_PERIOD_US = 100_000


@dataclass(frozen=True)
class Layout:
    """Where this process's cgroups live: v2 directory, or one directory per v1 controller."""

    version: int
    dirs: dict[str, str]  # controller -> directory of our own cgroup ("" key for v2)


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(root, mount point, fstype, super options) of cgroup mounts."""
    found = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((fields[3], fields[4], tail[0], set(tail[2].split(","))))
    return found


def _relative(path: str, root: str) -> str:
    if root != "/" and (path == root or path.startswith(root + "/")):
        path = path[len(root):]
    return path.lstrip("/")


def detect_layout(mountinfo: str, self_cgroup: str, wanted: tuple[str, ...] = ("memory", "pids")) -> Layout | None:
    """Pick v2 when it carries the wanted controllers, else v1; None when neither does."""
    membership = {}
    for line in self_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for name in parts[1].split(",") if parts[1] else [""]:
                membership[name] = parts[2]
    mounts = _mounts(mountinfo)
    for root, point, fstype, _ in mounts:
        if fstype == "cgroup2" and "" in membership:
            own = os.path.normpath(os.path.join(point, _relative(membership[""], root)))
            if set(wanted) <= set(_read(os.path.join(own, "cgroup.controllers")).split()):
                return Layout(2, {"": own})
    dirs = {}
    for root, point, fstype, options in mounts:
        for name in ("memory", "pids", "cpu"):
            if fstype == "cgroup" and name in options and name in membership:
                dirs[name] = os.path.normpath(os.path.join(point, _relative(membership[name], root)))
    return Layout(1, dirs) if set(wanted) <= set(dirs) else None


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def _write(path: str, value: str) -> None:
    with open(path, "w") as handle:
        handle.write(value)


def _counter(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


@dataclass
class SeatCgroup:
    version: int
    dirs: dict[str, str]  # controller -> seat directory ("" for v2)
    _applied: dict[str, str] = field(default_factory=dict)

    def _dir(self, controller: str) -> str | None:
        return self.dirs.get("" if self.version == 2 else controller)

    def _set(self, controller: str, name: str, value: str) -> None:
        directory = self._dir(controller)
        key = f"{controller}/{name}"
        if directory and self._applied.get(key) != value:
            _write(os.path.join(directory, name), value)
            self._applied[key] = value

    def configure(self, limits: Limits) -> None:
        """Set this job's limits; the proxy calls it before the job's init starts."""
        memory = str(limits.memory_mb * MIB)
        self._set("pids", "pids.max", str(limits.processes + 1))  # +1: the job's init
        if self.version == 2:
            self._set("memory", "memory.max", memory)
            return
        directory = self._dir("memory")
        swap = directory and os.path.exists(os.path.join(directory, "memory.memsw.limit_in_bytes"))
        if swap and int(memory) > int(_read(os.path.join(str(directory), "memory.limit_in_bytes")) or 0):
            self._set("memory", "memory.memsw.limit_in_bytes", memory)  # v1: memsw >= mem at all times
        self._set("memory", "memory.limit_in_bytes", memory)
        if swap:
            self._set("memory", "memory.memsw.limit_in_bytes", memory)

    def join_self(self) -> None:
        """Move the calling process (the seat's init) into every seat cgroup."""
        for directory in dict.fromkeys(self.dirs.values()):
            _write(os.path.join(directory, "cgroup.procs"), "0")

    def oom_kills(self) -> int:
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        directory = self._dir("memory")
        return _counter(_read(os.path.join(directory, name)), "oom_kill") if directory else 0

    def pids(self) -> list[int]:
        directory = self._dir("pids")
        text = _read(os.path.join(directory, "cgroup.procs")) if directory else ""
        return [int(pid) for pid in text.split()]


def _enable_v2_controllers(directory: str, wanted: tuple[str, ...], available_in: str | None = None) -> None:
    """Enable `wanted` for the children of `directory`, as far as its parent offers them."""
    source = available_in or os.path.join(directory, "cgroup.controllers")
    available = set(_read(source).split())
    enabled = set(_read(os.path.join(directory, "cgroup.subtree_control")).split())
    missing = [name for name in wanted if name in available and name not in enabled]
    if missing:
        _write(os.path.join(directory, "cgroup.subtree_control"), " ".join(f"+{name}" for name in missing))


def _prepare_v2_parent(own: str, tag: str) -> None:
    """v2 forbids controllers below a cgroup that holds processes ("no internal
    processes"): when we are alone in our delegated cgroup, step into a leaf."""
    try:
        _enable_v2_controllers(own, ("memory", "pids", "cpu"))
    except OSError:
        if _read(os.path.join(own, "cgroup.procs")).split() != [str(os.getpid())]:
            raise
        leaf = os.path.join(own, f"sandbox-{tag}-server")
        os.makedirs(leaf, exist_ok=True)
        _write(os.path.join(leaf, "cgroup.procs"), "0")
        _enable_v2_controllers(own, ("memory", "pids", "cpu"))


@dataclass
class CgroupTree:
    layout: Layout
    bases: list[str]
    seats: list[SeatCgroup]

    def describe(self) -> str:
        controllers = "memory+pids+cpu" if self.layout.version == 2 else "+".join(sorted(self.layout.dirs))
        return f"cgroup v{self.layout.version} ({controllers}) under {', '.join(self.bases)}"

    def remove(self) -> None:
        for seat in self.seats:
            for directory in dict.fromkeys(seat.dirs.values()):
                _rmdir(directory)
        for base in self.bases:
            _rmdir(base)


def _rmdir(directory: str) -> None:
    try:
        os.rmdir(directory)
    except OSError:
        pass  # still busy or already gone: a stale empty cgroup is harmless


def create_tree(layout: Layout, tag: str, seats: int) -> CgroupTree:
    """Create `sandbox-<tag>/seat-<n>` under our own cgroup(s) with the fixed settings."""
    bases = {name: os.path.join(own, f"sandbox-{tag}") for name, own in layout.dirs.items()}
    if layout.version == 2:
        _prepare_v2_parent(layout.dirs[""], tag)
    for base in bases.values():
        os.makedirs(base, exist_ok=True)
    if layout.version == 2:
        own = layout.dirs[""]
        _enable_v2_controllers(bases[""], ("memory", "pids", "cpu"), os.path.join(own, "cgroup.subtree_control"))
    tree = CgroupTree(layout, sorted(set(bases.values())), [])
    for index in range(seats):
        dirs = {name: os.path.join(base, f"seat-{index}") for name, base in bases.items()}
        for directory in dirs.values():
            os.makedirs(directory, exist_ok=True)
        tree.seats.append(SeatCgroup(layout.version, dirs))
        _fixed_settings(layout.version, dirs)
    return tree


def _fixed_settings(version: int, dirs: dict[str, str]) -> None:
    # One core per seat: a fork bomb or busy loop cannot starve the other jobs.
    if version == 2:
        seat = dirs[""]
        for name, value in (("cpu.max", f"{_CPU_PERIOD_US} {_CPU_PERIOD_US}"), ("memory.swap.max", "0")):
            if os.path.exists(os.path.join(seat, name)):
                _write(os.path.join(seat, name), value)
    elif "cpu" in dirs:
        _write(os.path.join(dirs["cpu"], "cpu.cfs_period_us"), str(_CPU_PERIOD_US))
        _write(os.path.join(dirs["cpu"], "cpu.cfs_quota_us"), str(_CPU_PERIOD_US))


def remove_stale_trees(layout: Layout) -> None:
    """Trees of servers that died without cleaning up (SIGKILL): empty, so removable."""
    for own in layout.dirs.values():
        for name in os.listdir(own):
            pid = name.removeprefix("sandbox-")
            if name.startswith("sandbox-") and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                base = os.path.join(own, name)
                for seat in os.listdir(base):
                    if os.path.isdir(os.path.join(base, seat)):
                        _rmdir(os.path.join(base, seat))
                _rmdir(base)


def setup_cgroups(tag: str, seats: int) -> tuple[CgroupTree | None, str]:
    """Best effort: (tree, description) or (None, why not)."""
    try:
        layout = detect_layout(_read("/proc/self/mountinfo"), _read("/proc/self/cgroup"))
        if layout is None:
            return None, "no cgroup memory+pids controllers available"
        remove_stale_trees(layout)
        tree = create_tree(layout, tag, seats)
        return tree, tree.describe()
    except OSError as exc:
        return None, f"cgroups unavailable: {exc}"
