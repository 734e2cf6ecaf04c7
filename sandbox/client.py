"""The client the Celery worker (and the CLI) use to run a job in the sandbox server.

A server is reached on its unix socket (`socket_path`, this host) or at an endpoint
(`sandbox/network.py`: `unix:///path` or `tls://host:port` with mutual TLS); `sandbox/pool.py`
spreads jobs over several endpoints.

Errors are split by whose fault they are: a `JobResult` with a non-ok status is
the job's doing; a `SandboxError` is infrastructure (retry, never charge the
student an attempt); a `SandboxRequestError` is a bug in what the caller sent.
`SandboxNotStarted` says more: the job certainly did not start (another host may take it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import ssl
import time
from collections.abc import Mapping
from typing import Any

from sandbox.job_response import INSECURE_DEV, InvalidResponse, JobResult, parse_response
from sandbox.limits import Limits, LimitsError, validate_limits
from sandbox.network import TORCHLESS_SUFFIX, Endpoint, NotStarted, connect, parse_endpoint, read_status
from sandbox.protocol import (
    PROTOCOL_VERSION,
    JobRequest,
    ProtocolError,
    checked_log_fields,
    recv_message,
    send_message,
)

DEFAULT_SOCKET = "/run/sandbox/sandbox.sock"
__all__ = ["DEFAULT_SOCKET", "TORCHLESS_SUFFIX", "InsecureBackendRefused", "SandboxError", "SandboxNotStarted",
           "SandboxProtocolError", "SandboxRequestError", "SandboxUnavailable", "ping", "run_job", "status"]
_QUEUE_ALLOWANCE_SECONDS = 60.0  # time a job may wait for a free slot (back-pressure)


class SandboxError(Exception):
    """The sandbox could not produce a verdict (not the student's fault)."""


class SandboxUnavailable(SandboxError):
    """No server answered in time."""


class SandboxNotStarted(SandboxUnavailable):
    """Refused, timed out or failed TLS before the request was sent: the job certainly did not run."""


class SandboxProtocolError(SandboxError):
    """The server's answer broke the schema or a size cap."""


class SandboxRequestError(SandboxError, ValueError):
    """The request itself was unacceptable (oversized source, bad limits, non-JSON input)."""


class InsecureBackendRefused(SandboxError):
    """The server runs the development backend but the caller did not allow it."""


def default_socket_path() -> str:
    return os.environ.get("SANDBOX_SOCKET") or DEFAULT_SOCKET


def _endpoint(target: str | Endpoint) -> Endpoint:
    """An endpoint, or a plain socket path (relative too)."""
    return target if isinstance(target, Endpoint) else parse_endpoint(target)


def _exchange(target: str | Endpoint, message: dict[str, Any], timeout: float, max_bytes: int,
              tls: ssl.SSLContext | None = None) -> dict[str, Any]:
    endpoint = _endpoint(target)
    try:
        sock = connect(endpoint, tls, timeout)
    except NotStarted as exc:
        raise SandboxNotStarted(f"sandbox at {endpoint.path or endpoint} unavailable: {exc}") from None
    try:
        with sock:
            send_message(sock, message)
            return recv_message(sock, max_bytes)
    except ProtocolError as exc:
        raise SandboxProtocolError(str(exc)) from None
    except OSError as exc:  # includes TimeoutError and TLS errors: the job may have run
        raise SandboxUnavailable(f"sandbox at {endpoint.path or endpoint} unavailable: {exc}") from None


def _checked(document: dict[str, Any]) -> dict[str, Any]:
    if document.get("v") != PROTOCOL_VERSION:
        raise SandboxProtocolError("unsupported protocol version in response")
    if isinstance(document.get("failure"), str) and document.get("not_started") is True:
        raise SandboxNotStarted(f"sandbox host: {document['failure'][:1000]}")
    if isinstance(document.get("failure"), str):
        raise SandboxError(f"sandbox failure: {document['failure'][:1000]}")
    if isinstance(document.get("rejected"), str):
        raise SandboxRequestError(f"sandbox rejected the request: {document['rejected'][:1000]}")
    return document


def ping(*, socket_path: str | Endpoint, timeout: float = 5.0, tls: ssl.SSLContext | None = None) -> dict[str, Any]:
    """Round-trip to a proxy (on a unix socket: it waits for a free slot); returns {"backend": ...}."""
    document = _checked(_exchange(socket_path, {"v": PROTOCOL_VERSION, "op": "ping"}, timeout, 4096, tls))
    if document.get("op") != "pong" or not isinstance(document.get("backend"), str):
        raise SandboxProtocolError("unexpected answer to ping")
    return {"backend": document["backend"]}


def status(*, socket_path: str | Endpoint, timeout: float = 2.0, tls: ssl.SSLContext | None = None) -> dict[str, Any]:
    """The server's state from its accept loop, answered while every slot is busy: {"slots", "busy",
    "queued" (None where unknown), "backend", "version", ...}. For health checks and the pool."""
    endpoint = _endpoint(socket_path)
    if endpoint.is_tls:
        document = _checked(_exchange(endpoint, {"v": PROTOCOL_VERSION, "op": "status"}, timeout, 4096, tls))
    else:
        try:
            document = _checked(read_status(endpoint.path, timeout))
        except ProtocolError as exc:
            raise SandboxProtocolError(str(exc)) from None
        except OSError as exc:
            raise SandboxNotStarted(f"sandbox at {endpoint.path} unavailable: {exc}") from None
    if document.get("op") != "status" or not isinstance(document.get("slots"), int):
        raise SandboxProtocolError("unexpected answer to status")
    return document


def _response_cap(limits: Limits) -> int:
    # JSON escaping can grow text up to 6x (\u0000); bound it, but generously.
    return 6 * (2 * limits.output_bytes + limits.result_bytes) + 64 * 1024


def _request(source: str, input: object, limits: Limits, fresh_interpreter: bool,
             without_torch: bool = False, log_fields: Mapping[str, int | str] | None = None) -> JobRequest:
    try:
        validate_limits(limits)
        input_json = json.dumps(input)
        fields = checked_log_fields(log_fields or {})
    except (LimitsError, TypeError, ValueError, ProtocolError) as exc:
        raise SandboxRequestError(str(exc)) from None
    return JobRequest(source=source, input_json=input_json, limits=limits, fresh_interpreter=fresh_interpreter,
                      without_torch=without_torch, log_fields=fields)


def run_job(
    *,
    source: str,
    input: object = None,
    limits: Limits | None = None,
    socket_path: str | Endpoint,
    tls: ssl.SSLContext | None = None,
    timeout: float | None = None,
    allow_insecure_dev_backend: bool = False,
    fresh_interpreter: bool = False,
    without_torch: bool = False,
    log_fields: Mapping[str, int | str] | None = None,
) -> JobResult:
    """Run `source` in the sandbox and return its validated result.

    `input` is handed to the job as JSON (`sandbox_guest.job_input()`); never put
    answers or reference code in it. `fresh_interpreter` is the benchmark baseline;
    `without_torch` runs the job on the server's torch-less sibling (`socket_path` + ".torchless"),
    where torch exists neither in memory nor on disk: for "by hand" parts. `log_fields` (the grader
    sends `submission_id`) appear on the server's log lines about this job. `socket_path` is a unix
    socket's path or an endpoint (`tls://host:port` needs `tls`, from `network.client_context`).
    """
    limits = limits or Limits()
    request = _request(source, input, limits, fresh_interpreter, without_torch, log_fields)
    started = time.monotonic()
    wait = timeout if timeout is not None else limits.wall_seconds + _QUEUE_ALLOWANCE_SECONDS
    endpoint = _endpoint(socket_path)
    if without_torch and not endpoint.is_tls:  # over TLS the host's listener picks the socket
        endpoint = dataclasses.replace(endpoint, path=endpoint.path + TORCHLESS_SUFFIX)
    document = _checked(_exchange(endpoint, request.to_message(), wait, _response_cap(limits), tls))
    try:
        result = parse_response(document, limits)
    except InvalidResponse as exc:
        raise SandboxProtocolError(f"invalid result document: {exc}") from None
    if result.backend == INSECURE_DEV and not allow_insecure_dev_backend:
        raise InsecureBackendRefused(
            "the sandbox server runs the insecure development backend; pass "
            "allow_insecure_dev_backend=True only on a development machine")
    timings = {**result.timings, "roundtrip_ms": round((time.monotonic() - started) * 1000, 3)}
    return dataclasses.replace(result, timings=timings)
