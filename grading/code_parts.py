"""Code parts: run the student's code in the sandbox with the harness, then diagnose.

The job gets only the student's source, what to call or read, and the evaluation
points; never the reference program or the expected values. What comes back is
untrusted and is validated by chainrule.answers.code_grading before anything reads it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from assignments.models import Part
from assignments.part_config import CodeConfig
from chainrule import Diagnosis, Highlight
from chainrule.answers.code_grading import grade_code
from chainrule.code.harness import harness_source
from chainrule.result import cause_lines
from config.structured_logging import current_log_fields
from grading.outside_runs import sandbox_call
from grading.reference import ReferenceRunError, SandboxUnavailable, sandbox_limits


def code_part_diagnosis(*, part: Part, source: str, points: list[dict[str, Any]], analyses: list[Any]) -> Diagnosis:
    """Raises ReferenceRunError when the sandbox itself is unavailable (an infrastructure error)."""
    return code_parts_diagnoses(parts=[part], sources={part.key: source}, points=points, analyses=analyses)[part.key]


def code_parts_diagnoses(*, parts: list[Part], sources: dict[str, str], points: list[dict[str, Any]],
                         analyses: list[Any]) -> dict[str, Diagnosis]:
    """Every code part of a submission at every point in one sandbox job (two when some are by hand:
    those run where torch does not exist). Raises ReferenceRunError when the sandbox is unavailable."""
    outputs: dict[str, Any] = {}
    for without_torch in (False, True):
        group = [part for part in parts if part.code.by_hand == without_torch]
        if not group:
            continue
        jobs = [_job(config=part.code, source=sources[part.key], points=points) for part in group]
        reports = _run_harness(job=jobs[0] if len(jobs) == 1 else {"parts": jobs}, without_torch=without_torch)
        if len(jobs) == 1:
            reports = {"parts": [reports]}
        listed = reports.get("parts") if isinstance(reports, dict) and "parts" in reports else None
        for index, part in enumerate(group):  # a failed job (timeout, crash) is every part's feedback
            outputs[part.key] = listed[index] if isinstance(listed, list) and index < len(listed) else reports
    return {part.key: _graded(part=part, source=sources[part.key], output=outputs[part.key], points=points,
                              analyses=analyses) for part in parts}


def _graded(*, part: Part, source: str, output: Any, points: list[dict[str, Any]], analyses: list[Any]) -> Diagnosis:
    config = part.code
    returns = list(config.returns) if config.mode == "function" else None
    diagnoses = grade_code(
        harness_output=output, analyses=analyses, points=points, parts=config.keys_read(part.key),
        returns=returns, rel_tol=part.rel_tol, abs_tol=part.abs_tol, reference_error=config.reference_error,
        source=source, function=config.function or None, signature=config.signature or None,
        requirements=config.requirements, reference_source=part.assignment.reference_program,
    )
    return combined_diagnosis(key=part.key, diagnoses=diagnoses)


def _job(*, config: CodeConfig, source: str, points: list[dict[str, Any]]) -> dict[str, Any]:
    job: dict[str, Any] = {"mode": config.mode, "source": source, "points": points}
    if config.mode == "function":
        job.update(function=config.function, args=list(config.args), returns=len(config.returns),
                   arg_type=config.arg_type, forbid_autograd=config.forbid_autograd,
                   signature=config.shown_signature)
    else:
        job["reads"] = list(config.reads)
    return job


def _run_harness(*, job: dict[str, Any], without_torch: bool = False) -> Any:
    """The harness's report; kept out of any staged transaction (grading/outside_runs.py)."""
    return sandbox_call(f"harness:{without_torch}", job, lambda: _harness_job(job=job, without_torch=without_torch),
                        out_of_time=ReferenceRunError)


def _harness_job(*, job: dict[str, Any], without_torch: bool) -> Any:
    from infra.sandbox_pool import sandbox_job
    from sandbox.client import SandboxError

    try:
        result = sandbox_job(source=harness_source(), input=job, limits=sandbox_limits(), without_torch=without_torch,
                             log_fields=current_log_fields())
    except SandboxError as exc:
        raise SandboxUnavailable(exc) from None
    if result.status == "ok" and result.result is not None:
        return result.result
    # Timeouts, memory and crashes are the student's program's doing: feedback, not errors.
    message = result.error or f"Your code ended with status {result.status}."
    return {"ok": False, "error": message, "stdout": result.stdout[-2000:], "points": []}


def combined_diagnosis(*, key: str, diagnoses: dict[str, Diagnosis]) -> Diagnosis:
    """One verdict for a part that answers several gradients (e.g. grad_z returns two)."""
    if len(diagnoses) == 1:
        return replace(next(iter(diagnoses.values())), part=key)
    wrong = [d for d in diagnoses.values() if not d.correct]
    expected: dict[str, Any] = {name: d.expected for name, d in diagnoses.items()}
    detail: dict[str, Any] = {"components": {name: d.to_json() for name, d in diagnoses.items()}}
    if not wrong:
        named = [_named(d) for d in diagnoses.values()]
        names = " and ".join(named) if len(named) == 2 else ", ".join(named)
        message = f"Correct: {names} {'both' if len(named) == 2 else 'all'} match the gradients autograd computes."
        return Diagnosis(key, True, "correct", [], message, expected=expected, detail=detail)
    highlight = Highlight.merged(d.highlight for d in wrong)
    right = [_named(d) for d in diagnoses.values() if d.correct]
    messages = {d.message for d in wrong}
    message = messages.pop() if len(messages) == 1 else " ".join(_prefixed(d) for d in wrong)
    if right:
        message += f" ({', '.join(right)} {'is' if len(right) == 1 else 'are'} right.)"
    lines = sorted({line for d in wrong for line in cause_lines(d.detail)})  # where each wrong gradient's cause is
    return Diagnosis(key, False, wrong[0].kind, [p for d in wrong for p in d.paths], message,
                     also=[d.kind for d in wrong[1:]], highlight=highlight, expected=expected,
                     detail={**detail, "cause_lines": lines} if lines else detail)


def _prefixed(diagnosis: Diagnosis) -> str:
    """One value's message among several: named once ("Your dL_dw is …", not "your dL_dw: Your dL_dw is …")."""
    name = _named(diagnosis)
    return diagnosis.message if diagnosis.message.lower().startswith(name.lower()) else f"{name}: {diagnosis.message}"


def _named(diagnosis: Diagnosis) -> str:
    """A function part's value by what the student calls it ("your dz_dy"), a program's by its read."""
    subject = diagnosis.detail.get("subject")
    return f"your {subject}" if isinstance(subject, str) else diagnosis.part
