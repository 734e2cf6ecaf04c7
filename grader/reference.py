"""Backends that run an assignment's reference program and return its analysis.

The backend is chosen by the dotted path in settings.GRADER_REFERENCE_RUNNER, like
Django's EMAIL_BACKEND, so the sandbox can replace the plain subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string


class ReferenceError(Exception):
    """The reference program could not be analysed (an authoring or infrastructure problem)."""


class ReferenceRunner:
    def analyze(self, *, program: str, params: dict[str, Any], parts: list[str]) -> dict[str, Any]:
        raise NotImplementedError


class SubprocessRunner(ReferenceRunner):
    """Runs `python -m chainrule.analyze` in a fresh process with a timeout and no secrets."""

    def analyze(self, *, program: str, params: dict[str, Any], parts: list[str]) -> dict[str, Any]:
        job = json.dumps({"program": program, "params": params, "parts": parts})
        env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "chainrule.analyze"], input=job, capture_output=True, text=True,
                timeout=settings.GRADER_REFERENCE_TIMEOUT, cwd=settings.BASE_DIR, env=env,
            )
        except subprocess.TimeoutExpired:
            raise ReferenceError(f"reference program exceeded {settings.GRADER_REFERENCE_TIMEOUT:g} s") from None
        return _decode(proc.stdout, proc.stderr)


def _decode(stdout: str, stderr: str) -> dict[str, Any]:
    try:
        reply = json.loads(stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise ReferenceError(f"reference analysis crashed: {stderr.strip()[-2000:] or 'no output'}") from None
    if not isinstance(reply, dict) or not reply.get("ok"):
        error = reply.get("error", "unknown error") if isinstance(reply, dict) else "malformed reply"
        raise ReferenceError(str(error)[:2000])
    analysis = reply.get("analysis")
    if not isinstance(analysis, dict):
        raise ReferenceError("reference analysis returned no analysis")
    return analysis


def get_runner() -> ReferenceRunner:
    runner_class = import_string(settings.GRADER_REFERENCE_RUNNER)
    runner: ReferenceRunner = runner_class()
    return runner
