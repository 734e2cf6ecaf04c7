"""A warm, hardened sandbox for untrusted Python/torch code (no Django, no Celery).

    from sandbox import Limits, run_job
    result = run_job(source=code, input={"x": 2.0}, limits=Limits(wall_seconds=5),
                     socket_path="/run/sandbox/sandbox.sock")

Start the server with `sandbox.server.spawn_server(...)` or
`python -m sandbox serve --socket PATH`.
"""

from __future__ import annotations

from sandbox.client import (
    InsecureBackendRefused,
    SandboxError,
    SandboxProtocolError,
    SandboxRequestError,
    SandboxUnavailable,
    ping,
    run_job,
)
from sandbox.job_response import JobResult
from sandbox.limits import Limits, LimitsError, validate_limits

__all__ = [
    "InsecureBackendRefused",
    "JobResult",
    "Limits",
    "LimitsError",
    "SandboxError",
    "SandboxProtocolError",
    "SandboxRequestError",
    "SandboxUnavailable",
    "ping",
    "run_job",
    "validate_limits",
]
