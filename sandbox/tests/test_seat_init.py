"""How a seat's init gives each job's PID namespace its PID 1 (sandbox/seat_init.py), without a server."""

from __future__ import annotations

import errno
import os

import pytest

from sandbox import job_init, linux, seat_init


@pytest.fixture
def no_namespaces(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """setns/unshare are recorded, not done."""
    calls: list[int] = []
    monkeypatch.setattr(linux, "setns", lambda fd, kind: calls.append(kind))
    monkeypatch.setattr(linux, "unshare", lambda flags: calls.append(flags))
    return calls


def _spawn_failing_with(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    def spawn(fd: int) -> int:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(job_init, "spawn", spawn)


@pytest.mark.parametrize("code", [errno.EACCES, errno.EPERM, errno.ENOEXEC])
def test_a_kernel_refusing_to_run_the_memfd_means_the_python_init_from_then_on(
        monkeypatch: pytest.MonkeyPatch, no_namespaces: list[int], code: int) -> None:
    _spawn_failing_with(monkeypatch, code)
    inits = seat_init._JobInits(os.open("/dev/null", os.O_RDONLY))
    assert inits.new_namespace(-1) is False
    assert inits.image == -1
    assert len(no_namespaces) == 4  # the namespace the failed attempt killed was replaced by a new one


@pytest.mark.parametrize("code", [errno.EAGAIN, errno.ENOMEM])
def test_a_passing_shortage_does_not_give_the_small_init_up_for_good(
        monkeypatch: pytest.MonkeyPatch, no_namespaces: list[int], code: int) -> None:
    """No pid or memory left for a moment (the seat's cgroup at its limit): an error for this seat init
    (the zygote rebuilds the seat, which tries the small program again), not a silent switch of this
    long-lived init to a fork of the warm image per job with a warning that the kernel refused it."""
    _spawn_failing_with(monkeypatch, code)
    image = os.open("/dev/null", os.O_RDONLY)
    inits = seat_init._JobInits(image)
    try:
        with pytest.raises(OSError) as raised:
            inits.new_namespace(-1)
        assert raised.value.errno == code
        assert inits.image == image
    finally:
        os.close(image)
