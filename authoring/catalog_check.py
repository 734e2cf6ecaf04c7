"""`load_assignments --check`: vet catalog files as a course repository's CI would, writing nothing."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from django.db import transaction

from assignments.models import Assignment, Course
from authoring.authored_checks import authored_mismatches
from authoring.reasons import Reason, reasons_open, warnings_of
from authoring.vetting import assignment_vet
from catalog.errors import CatalogError
from catalog.spec import spec_from_file
from catalog.upsert import assignment_upsert
from grading.outside_runs import runs_outside
from grading.reference import ReferenceRunError
from grading.variants import variant_get


class _RollBack(Exception):
    pass


class CheckLines(NamedTuple):
    refused: list[str]  # one `file: field: problem` line per reason that blocks; empty when every file passes
    warnings: list[str]  # `file: field: warning: problem`: told, never blocking


def catalog_check(*, paths: list[Path]) -> CheckLines:
    """Every reason over all files, the blocking ones apart from the warnings."""
    lines = CheckLines([], [])
    for path in paths:
        try:
            for reason in _file_reasons(path):
                (lines.warnings if reason.warning else lines.refused).append(reason.line(path.name))
        except CatalogError as exc:
            lines.refused.append(str(exc))
    return lines


def _file_reasons(path: Path) -> list[Reason]:
    spec = spec_from_file(path)

    def one_pass() -> list[Reason]:  # the references run between passes (grading/outside_runs.py)
        reasons: list[Reason] = []
        try:
            with transaction.atomic():
                course, _ = Course.objects.get_or_create(slug="catalog-check", defaults={"title": "catalog check"})
                assignment, _ = assignment_upsert(spec=spec, course=course)
                reasons = assignment_reasons(assignment=assignment)
                raise _RollBack
        except _RollBack:
            pass
        return reasons

    reasons = runs_outside(one_pass)
    return reasons_open(reasons=reasons, accepted=spec.accepted) + warnings_of(reasons)


def assignment_reasons(*, assignment: Assignment) -> list[Reason]:
    """Vetting's reasons, and the authored `expected` values and formulas the reference contradicts
    (codes `mismatch:…`). Runs the reference: call from a worker or a command, never a web request."""
    reasons = assignment_vet(assignment=assignment)
    if not any(r.field == "reference" or r.code.startswith("no-tensor") for r in reasons):
        reasons += _authored_mismatches(assignment)
    return reasons


def _authored_mismatches(assignment: Assignment) -> list[Reason]:
    try:
        variant = variant_get(assignment=assignment, params=assignment.params)
        found = authored_mismatches(assignment=assignment, variant=variant)
    except ReferenceRunError as exc:
        return [Reason(code="reference-fails:reference", field="reference", problem=str(exc))]
    return [Reason(code=f"mismatch:{field}", field=field, problem=problem) for field, problem in found]
