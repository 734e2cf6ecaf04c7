"""The sandbox endpoints this process uses (settings SANDBOX_ENDPOINTS, else the local SANDBOX_SOCKET),
as one `sandbox.pool.EndpointPool` per configuration, so its health is shared by every call."""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings

from sandbox.client import SandboxUnavailable
from sandbox.job_response import JobResult
from sandbox.pool import EndpointPool

_pools: dict[tuple[Any, ...], EndpointPool] = {}
_lock = threading.Lock()


def sandbox_pool() -> EndpointPool:
    if not settings.SANDBOX_USED:
        raise SandboxUnavailable("this process runs no sandbox jobs (SANDBOX_ENDPOINTS=none)")
    endpoints = tuple(settings.SANDBOX_ENDPOINTS) or (settings.SANDBOX_SOCKET,)
    key = (endpoints, settings.SANDBOX_TLS)
    with _lock:
        if key not in _pools:
            _pools[key] = EndpointPool(endpoints, settings.SANDBOX_TLS)
        return _pools[key]


def sandbox_job(**job: Any) -> JobResult:
    """`sandbox.client.run_job(**job)` on this deployment's sandboxes (SandboxError when none can)."""
    return sandbox_pool().run_job(allow_insecure_dev_backend=settings.SANDBOX_ALLOW_INSECURE_DEV_BACKEND, **job)


def sandbox_status() -> dict[str, dict[str, Any]]:
    """Each endpoint's status, answered while its slots are busy (`{"error": ...}` for one that is away)."""
    return sandbox_pool().status()
