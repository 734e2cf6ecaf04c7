"""The zygote's handle on its proxy spawner (sandbox/proxies.py), against a fake spawner."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator

import pytest

from sandbox import proxies
from sandbox.confine import Identity
from sandbox.context import Seat

SEAT = Seat(0, Identity(65000, 65000, switch=False, dedicated=False), None)


@pytest.fixture
def fake() -> Iterator[tuple[subprocess.Popen[bytes], socket.socket, socket.socket]]:
    """A process standing for the spawner (so that it can be killed) and the spawner's end of its line."""
    process = subprocess.Popen(["sleep", "60"])
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    yield process, ours, theirs
    process.kill()
    process.wait()
    ours.close()
    theirs.close()


def _answer(theirs: socket.socket, pid: int) -> threading.Thread:
    def serve() -> None:
        _, fds, _, _ = socket.recv_fds(theirs, proxies._REQUEST.size, 2)
        for fd in fds:
            os.close(fd)
        theirs.send(proxies._PID.pack(pid))

    thread = threading.Thread(target=serve)
    thread.start()
    return thread


@pytest.mark.parametrize("lie", ["the zygote's own pid", "0"])
def test_a_spawner_answering_a_pid_not_its_childs_is_killed(
        fake: tuple[subprocess.Popen[bytes], socket.socket, socket.socket], lie: str) -> None:
    process, ours, theirs = fake
    spawner = proxies.Spawner(process.pid, ours, ours)
    answering = _answer(theirs, os.getpid() if lie != "0" else 0)
    a, b = socket.socketpair()
    with a, b, pytest.raises(proxies.SpawnerGone):
        spawner.spawn(SEAT, 1, a, b)
    answering.join()
    assert spawner.failed
    assert process.wait(5) == -signal.SIGKILL


def test_a_spawner_answering_its_childs_pid_is_believed(
        fake: tuple[subprocess.Popen[bytes], socket.socket, socket.socket]) -> None:
    _, ours, theirs = fake
    spawner = proxies.Spawner(os.getpid(), ours, ours)  # we stand for the spawner: a child of ours is its child
    with subprocess.Popen(["sleep", "60"]) as child:
        answering = _answer(theirs, child.pid)
        a, b = socket.socketpair()
        with a, b:
            assert spawner.spawn(SEAT, 1, a, b) == child.pid
        answering.join()
        child.kill()
    assert not spawner.failed
