"""SymPy's equivalence check of a formula answer, run in the sandbox under a hard budget.

The worker never builds a SymPy expression itself: the job (chainrule.answers.formula_job)
gets CPU_SECONDS of CPU and MEMORY_MB of memory, and a formula that needs more is
"too complex to check" (None), which grade_symbolic turns into feedback.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from chainrule.answers.formula_job import CHECK_JOB, equivalence_request
from chainrule.answers.formula_parse import Formula
from config.structured_logging import current_log_fields
from grading.outside_runs import sandbox_call
from grading.reference import ReferenceRunError, SandboxUnavailable, sandbox_limits

CPU_SECONDS = 2.0
WALL_SECONDS = 4.0
MEMORY_MB = 512


def formula_equivalence_check(answer: Formula, reference: Formula, variables: list[str],
                              points: list[dict[str, float]]) -> bool | None:
    """True/False from SymPy; None when the job ran out of time or memory.
    Raises ReferenceRunError when the sandbox itself is unavailable (an infrastructure error)."""
    from infra.sandbox_pool import sandbox_job
    from sandbox.client import SandboxError

    limits = replace(sandbox_limits(), cpu_seconds=CPU_SECONDS, wall_seconds=WALL_SECONDS, memory_mb=MEMORY_MB)
    request = equivalence_request(answer, reference, variables, points)

    def run() -> Any:
        try:
            return sandbox_job(source=CHECK_JOB, input=request, limits=limits, log_fields=current_log_fields())
        except SandboxError as exc:
            raise SandboxUnavailable(exc) from None

    result = sandbox_call("formula", request, run, out_of_time=ReferenceRunError)
    if result.status in ("timeout", "memory"):
        return None
    reply = result.result
    if result.status != "ok" or not isinstance(reply, dict) or not isinstance(reply.get("equivalent"), bool):
        raise ReferenceRunError(result.error or f"formula check ended with status {result.status}")
    return bool(reply["equivalent"])
