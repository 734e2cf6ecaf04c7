"""Cgroup layout detection and limit writing, against fake cgroup trees."""

from __future__ import annotations

from pathlib import Path

from sandbox.cgroups import SeatCgroup, create_tree, detect_layout
from sandbox.limits import Limits

V1_MOUNTINFO = """\
30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
33 30 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
34 30 0:30 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
35 30 0:31 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
36 30 0:32 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V1_SELF = "4:memory:/svc/a\n8:pids:/\n1:cpu,cpuacct:/svc\n0::/\n"


def test_it_picks_v1_when_v2_has_no_controllers() -> None:
    layout = detect_layout(V1_MOUNTINFO, V1_SELF)
    assert layout is not None and layout.version == 1
    assert layout.dirs == {"memory": "/sys/fs/cgroup/memory/svc/a", "pids": "/sys/fs/cgroup/pids",
                           "cpu": "/sys/fs/cgroup/cpu,cpuacct/svc"}


def test_it_picks_v2_when_it_carries_memory_and_pids(tmp_path: Path) -> None:
    own = tmp_path / "system.slice" / "sandbox.service"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text("cpu memory pids\n")
    mountinfo = f"36 30 0:32 / {tmp_path} rw - cgroup2 cgroup2 rw\n"
    layout = detect_layout(mountinfo, "0::/system.slice/sandbox.service\n")
    assert layout is not None and (layout.version, layout.dirs) == (2, {"": str(own)})


def test_it_gives_up_without_controllers() -> None:
    assert detect_layout("36 30 0:32 / /nonexistent rw - cgroup2 cgroup2 rw\n", "0::/\n") is None


def test_v1_limits_keep_memsw_above_memory(tmp_path: Path) -> None:
    memory, pids = tmp_path / "memory", tmp_path / "pids"
    memory.mkdir()
    pids.mkdir()
    (memory / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    (memory / "memory.memsw.limit_in_bytes").write_text("9223372036854771712\n")
    seat = SeatCgroup(1, {"memory": str(memory), "pids": str(pids)})
    seat.configure(Limits(memory_mb=256, processes=10))
    assert (memory / "memory.limit_in_bytes").read_text() == str(256 * 2**20)
    assert (memory / "memory.memsw.limit_in_bytes").read_text() == str(256 * 2**20)
    assert (pids / "pids.max").read_text() == "11"  # the job's init counts too


def test_oom_kills_are_read_from_the_right_file(tmp_path: Path) -> None:
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n")
    (tmp_path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 7\n")
    assert SeatCgroup(2, {"": str(tmp_path)}).oom_kills() == 2
    assert SeatCgroup(1, {"memory": str(tmp_path)}).oom_kills() == 7


def test_a_v2_tree_enables_controllers_for_the_slots(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    (tmp_path / "cgroup.subtree_control").write_text("cpu memory pids\n")
    from sandbox.cgroups import Layout

    tree = create_tree(Layout(2, {"": str(tmp_path)}), "t", 2)
    base = tmp_path / "sandbox-t"
    assert (base / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    assert [seat.dirs[""] for seat in tree.seats] == [str(base / "seat-0"), str(base / "seat-1")]
