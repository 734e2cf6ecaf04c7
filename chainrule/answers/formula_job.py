"""SymPy's equivalence check of a student's formula against the author's, as a sandbox job.

Building and simplifying SymPy expressions has no useful time bound (its
assumption system alone can spin for minutes on a 65-character formula), so the
worker never does it: `CHECK_JOB` runs in the sandbox under a CPU and memory
limit, and a job that exceeds them means "too complex to check" (feedback for
the student), not a hung worker. Only formulas travel into the job, as plain
JSON trees (`Formula.to_json`), never answers or reference results. The job's
own side (`equivalence_reply`) lives with SymPy in `formula_sympy`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chainrule.answers.formula_parse import Formula

# (answer, reference, variables, points) -> True / False, or None: too complex to check
Equivalence = Callable[[Formula, Formula, list[str], list[dict[str, float]]], "bool | None"]
MAX_CHECK_POINTS = 64

CHECK_JOB = """
import sandbox_guest
from chainrule.answers.formula_sympy import equivalence_reply
sandbox_guest.emit(equivalence_reply(sandbox_guest.job_input()))
"""


def equivalence_request(answer: Formula, reference: Formula, variables: list[str],
                        points: list[dict[str, float]]) -> dict[str, Any]:
    """The job input: both formulas, the variable names and the scalar points to compare at."""
    return {"answer": answer.to_json(), "reference": reference.to_json(), "variables": list(variables),
            "points": [{name: float(point[name]) for name in variables} for point in points[:MAX_CHECK_POINTS]]}
