from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.jail import plan_root


def test_paths_the_jail_provides_itself_cannot_be_exposed() -> None:
    with pytest.raises(ValueError, match="/tmp is private to each job"):
        plan_root("/mnt/root", ["/tmp"])


def test_it_mirrors_real_system_paths() -> None:
    plan = plan_root("/mnt/root", ["/usr/lib", "/lib", "/usr/lib/x86_64-linux-gnu"])
    assert "/usr/lib" in plan.binds
    assert "/usr/lib/x86_64-linux-gnu" not in plan.binds  # inside /usr/lib already
    if Path("/lib").is_symlink():
        assert ("/lib", "usr/lib") in plan.symlinks


def test_paths_under_tmp_are_held_and_re_exposed_per_job(tmp_path: Path) -> None:
    """A checkout in /tmp (e.g. a CI clone) still works: its venv and packages are re-bound
    read-only into each job's fresh /tmp instead of being refused."""
    venv = tmp_path / ".venv"
    venv.mkdir()
    assert str(venv).startswith("/tmp/")
    plan = plan_root("/mnt/root", [str(venv), "/usr"])
    assert plan.held == (str(venv),)
    assert "/usr" in plan.binds and "/usr" not in plan.held
