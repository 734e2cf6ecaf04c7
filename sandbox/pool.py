"""A pool of sandbox endpoints: load spread, health, and retries that never run a job twice.

    pool = EndpointPool(["tls://sandbox-a:7000", "tls://sandbox-b:7000"], TlsFiles(ca, cert, key))
    result = pool.run_job(source=code, input=..., limits=...)

Spread: each job goes to an endpoint picked at random among the healthy ones (no shared state
between processes is needed, and a busy host's listen backlog evens out). Health: an endpoint that
refused, timed out or failed TLS is skipped for `back_off_seconds`, doubling on each further failure
up to `MAX_BACK_OFF_SECONDS`; once its back-off is over it is asked for its `status` (the channel
the server answers while every slot is busy) before it gets a job again, and is healthy after the
first answer. When every endpoint is backing off they are all tried, the one back soonest first.
Retries: a job moves to another endpoint ONLY when it certainly did not start there
(`SandboxNotStarted`: no request was sent, or the host's listener says its server refused); once the
request is sent, any failure is raised as it is, since the job may have run.
"""

from __future__ import annotations

import random
import ssl
import threading
import time
from collections.abc import Sequence
from typing import Any

from sandbox import client
from sandbox.client import SandboxError, SandboxNotStarted, SandboxUnavailable
from sandbox.job_response import JobResult
from sandbox.network import Endpoint, EndpointError, TlsFiles, client_context, parse_endpoint

BACK_OFF_SECONDS = 2.0
MAX_BACK_OFF_SECONDS = 30.0
PROBE_SECONDS = 2.0  # a recovering endpoint's status must answer within this


class EndpointPool:
    def __init__(self, endpoints: Sequence[str | Endpoint], tls: TlsFiles | None = None, *,
                 back_off_seconds: float = BACK_OFF_SECONDS, rng: random.Random | None = None) -> None:
        self.endpoints = [e if isinstance(e, Endpoint) else parse_endpoint(e) for e in endpoints]
        if not self.endpoints:
            raise EndpointError("a sandbox pool needs at least one endpoint")
        needs_tls = [str(e) for e in self.endpoints if e.is_tls]
        if needs_tls and tls is None:
            raise EndpointError(f"{', '.join(needs_tls)} need SANDBOX_TLS_CA, SANDBOX_TLS_CERT and SANDBOX_TLS_KEY")
        self.tls: ssl.SSLContext | None = client_context(tls) if tls and needs_tls else None
        self.back_off_seconds = back_off_seconds
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._down_until: dict[str, float] = {}
        self._failures: dict[str, int] = {}

    def order(self) -> list[Endpoint]:
        """Healthy endpoints in random order, then those backing off, the one back soonest first."""
        now = time.monotonic()
        with self._lock:
            healthy = [e for e in self.endpoints if self._down_until.get(e.url, 0.0) <= now]
            resting = sorted((e for e in self.endpoints if e not in healthy), key=lambda e: self._down_until[e.url])
        self._rng.shuffle(healthy)
        return healthy + resting

    def healthy(self) -> list[Endpoint]:
        now = time.monotonic()
        with self._lock:
            return [e for e in self.endpoints if self._down_until.get(e.url, 0.0) <= now]

    def mark_down(self, endpoint: Endpoint) -> None:
        with self._lock:
            failures = self._failures.get(endpoint.url, 0) + 1
            self._failures[endpoint.url] = failures
            delay = min(MAX_BACK_OFF_SECONDS, self.back_off_seconds * 2 ** (failures - 1))
            self._down_until[endpoint.url] = time.monotonic() + delay

    def mark_up(self, endpoint: Endpoint) -> None:
        with self._lock:
            self._failures.pop(endpoint.url, None)
            self._down_until.pop(endpoint.url, None)

    def run_job(self, **job: Any) -> JobResult:
        """`client.run_job(**job)` on one endpoint; SandboxUnavailable when none would take it."""
        refusals = []
        for endpoint in self.order():
            if self._recovering(endpoint) and not self._answers(endpoint):
                refusals.append(f"{endpoint}: no answer to status")
                continue
            try:
                result = client.run_job(socket_path=endpoint, tls=self.tls, **job)
            except SandboxNotStarted as exc:
                self.mark_down(endpoint)
                refusals.append(str(exc))
                continue
            self.mark_up(endpoint)
            return result
        raise SandboxNotStarted("no sandbox endpoint took the job: " + "; ".join(refusals)[:2000])

    def _recovering(self, endpoint: Endpoint) -> bool:
        with self._lock:
            return endpoint.url in self._failures

    def _answers(self, endpoint: Endpoint) -> bool:
        try:
            client.status(socket_path=endpoint, timeout=PROBE_SECONDS, tls=self.tls)
        except SandboxUnavailable:
            self.mark_down(endpoint)
            return False
        except SandboxError:
            pass  # it answers, if oddly: the job will tell
        self.mark_up(endpoint)
        return True

    def status(self, timeout: float = 2.0) -> dict[str, dict[str, Any]]:
        """Each endpoint's status, or {"error": ...}; updates health. Answers while slots are busy."""
        states: dict[str, dict[str, Any]] = {}
        for endpoint in self.endpoints:
            try:
                states[endpoint.url] = client.status(socket_path=endpoint, timeout=timeout, tls=self.tls)
            except SandboxUnavailable as exc:
                self.mark_down(endpoint)
                states[endpoint.url] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
            else:
                self.mark_up(endpoint)
        return states
