"""Backends that run an assignment's reference program and return its analysis.

The backend is chosen by the dotted path in settings.GRADER_REFERENCE_RUNNER, like
Django's EMAIL_BACKEND: SandboxRunner in production, SubprocessRunner where no sandbox
server runs (a fresh python per program, about 2 s each).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from chainrule import Analysis
from config.structured_logging import current_log_fields
from grading.outside_runs import sandbox_call


class ReferenceRunError(Exception):
    """The reference program could not be analysed (an authoring or infrastructure problem)."""


class SandboxUnavailable(ReferenceRunError):
    """The sandbox server could not be reached or gave up on the job's connection: nobody's fault in the
    program, and worth trying again shortly (a restart under load takes tens of seconds)."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(f"sandbox unavailable: {cause} ({SANDBOX_HINT})")


class ReferenceRunner:
    def analyze(self, *, program: str, params: dict[str, Any], parts: list[str]) -> dict[str, Any]:
        return _checked_reply(self._requested({"program": program, "params": params, "parts": parts}))

    def analyze_points(self, *, program: str, points: list[dict[str, Any]], parts: list[str]) -> list[Any]:
        """One analysis (or None where the program fails) per point, in one run."""
        reply = self._requested({"program": program, "points": points, "parts": parts})
        analyses = reply.get("analyses") if isinstance(reply, dict) and reply.get("ok") else None
        if not isinstance(analyses, list) or len(analyses) != len(points):
            raise ReferenceRunError(str(reply.get("error", "malformed reply"))[:2000] if isinstance(reply, dict)
                                 else "malformed reply")
        return [_valid_analysis(item) if item is not None else None for item in analyses]

    def _requested(self, job: dict[str, Any]) -> Any:
        """The run, kept out of any staged transaction (grading/outside_runs.py) and counted against the
        job's sandbox time."""
        return sandbox_call(f"reference:{type(self).__name__}", job, lambda: self.request(job),
                            out_of_time=ReferenceRunError)

    def request(self, job: dict[str, Any]) -> Any:
        raise NotImplementedError


class SubprocessRunner(ReferenceRunner):
    """Runs `python -m chainrule.analysis.cli` in a fresh process with a timeout and no secrets."""

    def request(self, job: dict[str, Any]) -> Any:
        env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "chainrule.analysis.cli"], input=json.dumps(job), capture_output=True, text=True,
                timeout=settings.GRADER_REFERENCE_TIMEOUT, cwd=settings.BASE_DIR, env=env,
            )
        except subprocess.TimeoutExpired:
            raise ReferenceRunError(f"reference program exceeded {settings.GRADER_REFERENCE_TIMEOUT:g} s") from None
        return _decode(proc.stdout, proc.stderr)


# The job the sandbox runs for a reference program. It receives the program as job
# input; reference code enters only these jobs, never a student's.
ANALYZE_JOB = """
import json, sandbox_guest
from chainrule.analysis.cli import respond
reply, _ = respond(json.dumps(sandbox_guest.job_input()))
sandbox_guest.emit(reply)
"""


SANDBOX_HINT = "`make run` starts it; alone: `bash scripts/start_sandbox.sh`"
# What the sandbox's zygotes import once (scripts/start_sandbox.sh and docker-compose.yml list the same):
# the analysis for reference programs, SymPy for formulas, the code-part harness. Its torch-less sibling
# imports those that need no torch.
SANDBOX_PRELOAD = ("chainrule.analysis", "chainrule.answers.formula_sympy", "chainrule.code.harness")


class SandboxRunner(ReferenceRunner):
    """Runs the analysis in the warm sandbox (tens of milliseconds instead of a fresh torch import)."""

    def request(self, job: dict[str, Any]) -> Any:
        from infra.sandbox_pool import sandbox_job
        from sandbox.client import SandboxError

        try:
            result = sandbox_job(source=ANALYZE_JOB, input=job, limits=sandbox_limits(reference=True),
                                 log_fields=current_log_fields())
        except SandboxError as exc:
            raise SandboxUnavailable(exc) from None
        if result.status != "ok" or not isinstance(result.result, dict):
            raise ReferenceRunError(result.error or f"reference job ended with status {result.status}")
        return result.result


def sandbox_limits(*, reference: bool = False) -> Any:
    """The job limits from settings; reference programs get the instructor's wall-clock budget."""
    from sandbox.limits import Limits

    limits = Limits(**settings.SANDBOX_LIMITS)
    if reference:
        wall = max(limits.wall_seconds, settings.GRADER_REFERENCE_TIMEOUT)
        # Analyses at several points are tens of KB each.
        return Limits(**{**settings.SANDBOX_LIMITS, "wall_seconds": wall, "cpu_seconds": wall,
                         "result_bytes": 32 * 1024 * 1024})
    return limits


def _decode(stdout: str, stderr: str) -> Any:
    try:
        return json.loads(stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise ReferenceRunError(f"reference analysis crashed: {stderr.strip()[-2000:] or 'no output'}") from None


def _checked_reply(reply: Any) -> dict[str, Any]:
    """The reply is untrusted data: check its shape before anything reads it."""
    if not isinstance(reply, dict) or not reply.get("ok"):
        error = reply.get("error", "unknown error") if isinstance(reply, dict) else "malformed reply"
        raise ReferenceRunError(str(error)[:2000])
    return _valid_analysis(reply.get("analysis"))


def _valid_analysis(analysis: Any) -> dict[str, Any]:
    if not isinstance(analysis, dict):
        raise ReferenceRunError("reference analysis returned no analysis")
    try:
        Analysis.from_json(analysis)
    except (KeyError, TypeError, ValueError) as exc:
        raise ReferenceRunError(f"reference analysis is malformed: {exc}") from None
    return analysis


def get_runner() -> ReferenceRunner:
    runner_class = import_string(settings.GRADER_REFERENCE_RUNNER)
    runner: ReferenceRunner = runner_class()
    return runner
