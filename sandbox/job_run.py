"""One job, from the proxy's side: read the request, hand it over, watch, answer.

Only facts the job cannot forge decide the verdict (see `outcome`); the
job's output is carried as opaque, capped text.
"""

from __future__ import annotations

import json
import logging
import os
import select
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sandbox.context import ProxyContext, Seat
from sandbox.outcome import Observation, classify
from sandbox.protocol import (
    MAX_REQUEST_BYTES,
    PROTOCOL_VERSION,
    JobRequest,
    ProtocolError,
    parse_request,
    recv_message,
    send_message,
)
from sandbox.supervise import Stream, Watch, watch_job

if TYPE_CHECKING:
    from sandbox.proxy import InitLink

log = logging.getLogger("sandbox")
REQUEST_TIMEOUT_SECONDS = 10.0
REPLY_TIMEOUT_SECONDS = 30.0
_STREAMS = ("stdout", "stderr", "result")


class InfrastructureFailure(Exception):
    """The sandbox (not the job) failed; the caller should retry, not blame the student."""


def _write_job(fd: int, payload: bytes, deadline: float) -> None:
    """Feed the student process its job; it reads it before anything else, so this is quick."""
    view = memoryview(payload)
    try:
        while view:
            _, writable, _ = select.select([], [fd], [], max(0.0, deadline - time.monotonic()))
            if not writable:
                return  # the wall clock will stop the job
            view = view[os.write(fd, view):]
    except BrokenPipeError:
        pass  # the student process died in set-up; the init reports why
    finally:
        os.close(fd)


def _start(request: JobRequest, init: InitLink, watch: Watch) -> float:
    """Hand the waiting student process its job; return the start time."""
    job_write, *readers = init.ends
    init.ends = []
    for name, fd in zip(_STREAMS, readers, strict=True):
        watch.streams[name].fd = fd
    job = {"limits": request.limits.to_dict(), "fresh": request.fresh_interpreter,
           "source": request.source, "input_json": request.input_json}
    started = time.monotonic()
    _write_job(job_write, json.dumps(job).encode(), started + request.limits.wall_seconds)
    return started


def _text(stream: Stream) -> str:
    return stream.data.decode("utf-8", errors="replace")


def _timings(started: float, cpu_seconds: float) -> dict[str, float]:
    """Milliseconds: from handing over the job until the init reports it over (its student process
    ended, everything else of the job killed); CPU used."""
    return {"run_ms": round((time.monotonic() - started) * 1000, 3), "cpu_ms": round(cpu_seconds * 1000, 3)}


def _response(request: JobRequest, watch: Watch, oom_killed: bool, ctx: ProxyContext,
              started: float) -> dict[str, Any]:
    exited = watch.event("exited") or {}
    streams = watch.streams
    stderr = _text(streams["stderr"])
    observation = Observation(
        wait_status=exited.get("status"), cpu_seconds=float(exited.get("cpu", 0.0)),
        timed_out=watch.timed_out, overflow=watch.overflow, oom_killed=oom_killed, stderr=stderr,
    )
    outcome = classify(observation, request.limits)
    emitted = bool(streams["result"].data) and watch.overflow != "result"
    return {
        "v": PROTOCOL_VERSION, "backend": ctx.backend, "status": outcome.status,
        "exit_code": outcome.exit_code, "signal": outcome.signal, "error": outcome.error,
        "stdout": _text(streams["stdout"]), "stdout_truncated": streams["stdout"].truncated,
        "stderr": stderr, "stderr_truncated": streams["stderr"].truncated,
        "result_json": _text(streams["result"]) if emitted else None,
        "timings": _timings(started, observation.cpu_seconds),
    }


def run(request: JobRequest, init: InitLink, seat: Seat, ctx: ProxyContext,
        client_fd: int) -> tuple[dict[str, Any] | None, Watch]:
    """Run the job on the seat; the response is None when the client went away."""
    limits = request.limits
    caps = {"stdout": limits.output_bytes, "stderr": limits.output_bytes, "result": limits.result_bytes}
    watch = Watch({name: Stream(-1, caps[name]) for name in _STREAMS})
    cgroup = seat.cgroup
    if cgroup is not None:
        cgroup.configure(limits)
    oom_before = cgroup.oom_kills() if cgroup else 0
    started = _start(request, init, watch)
    watch_job(watch, status_fd=init.control.fileno(), client_fd=client_fd,
              deadline=started + limits.wall_seconds,
              kill=init.ask_to_kill, hard_kill=init.hard_kill,
              oom_check=(lambda: cgroup.oom_kills() > oom_before) if cgroup else None)
    if watch.client_gone:
        return None, watch
    failure = watch.event("failure")
    if failure is not None:
        raise InfrastructureFailure(str(failure.get("message", "job set-up failed")))
    oom_killed = cgroup is not None and cgroup.oom_kills() > oom_before
    return _response(request, watch, oom_killed, ctx, started), watch


@dataclass(frozen=True)
class Served:
    outcome: str  # for the log
    ran_job: bool  # False: the init is still waiting and must be told to stand by again
    reusable: bool  # False: the seat must be rebuilt before the next job
    log_fields: Mapping[str, int | str] = field(default_factory=dict)  # what the request asked its lines to carry


def _reply(conn: socket.socket, document: dict[str, Any]) -> bool:
    """Best effort: a client that hung up is not the seat's problem."""
    try:
        # The job watch may have left the fd non-blocking: a large reply (an analysis of a big
        # graph) must still be sent whole, within a bound.
        conn.settimeout(REPLY_TIMEOUT_SECONDS)
        send_message(conn, document)
    except OSError as exc:
        log.info("reply of %s not delivered: %s", type(exc).__name__, exc)
        return False
    return True


def answer(conn: socket.socket, init: InitLink, seat: Seat, ctx: ProxyContext) -> Served:
    """Handle the one request on `conn`."""
    conn.settimeout(REQUEST_TIMEOUT_SECONDS)
    try:
        document = recv_message(conn, MAX_REQUEST_BYTES)
        request = None if document.get("op") == "ping" else parse_request(document)
        if request is not None and request.without_torch == ctx.torch:
            raise ProtocolError("a job without torch runs on the torch-less server's socket (<socket>.torchless), "
                                "any other job on the main socket")
    except (ProtocolError, OSError) as exc:
        _reply(conn, {"v": PROTOCOL_VERSION, "rejected": str(exc)})
        return Served(f"rejected: {exc}", ran_job=False, reusable=True)
    if request is None:
        _reply(conn, {"v": PROTOCOL_VERSION, "op": "pong", "backend": ctx.backend})
        return Served("ping", ran_job=False, reusable=True)
    conn.settimeout(None)
    fields = request.log_fields
    try:
        response, watch = run(request, init, seat, ctx, conn.fileno())
    except (InfrastructureFailure, OSError) as exc:
        _reply(conn, {"v": PROTOCOL_VERSION, "failure": str(exc)})
        return Served(f"failure: {exc}", ran_job=True, reusable=False, log_fields=fields)
    if response is None or not _reply(conn, response):
        return Served("client gone", ran_job=True, reusable=watch.init_alive, log_fields=fields)
    outcome = f"{response['status']} in {response['timings']['run_ms']:.1f} ms"
    return Served(outcome, ran_job=True, reusable=watch.init_alive, log_fields=fields)
