"""Parameter values per student and the cached reference analysis of each variant."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from django.db import IntegrityError
from django.utils import timezone

from assignments.models import Assignment, Variant
from grader.reference import ReferenceError, get_runner


def reference_hash(*, assignment: Assignment, params: dict[str, Any]) -> str:
    keys = sorted(assignment.parts.values_list("key", flat=True))
    blob = json.dumps([assignment.reference_program, params, keys], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def params_for_student(*, assignment: Assignment, student_id: int | None) -> dict[str, Any]:
    """Seed values, or values drawn with a stable seed per (student, assignment)."""
    params = dict(assignment.params)
    if student_id is None or not assignment.variant_ranges:
        return params
    rng = random.Random(f"{assignment.slug}:{student_id}")
    for name, rule in sorted(assignment.variant_ranges.items()):
        params[name] = _draw(rng, rule)
    return params


def _draw(rng: random.Random, rule: dict[str, Any]) -> Any:
    if "choices" in rule:
        return rng.choice(rule["choices"])
    step = float(rule.get("step", 1.0))
    count = int((float(rule["max"]) - float(rule["min"])) / step)
    return float(rule["min"]) + step * rng.randint(0, count)


def variant_get(*, assignment: Assignment, params: dict[str, Any]) -> Variant:
    """The variant for these parameters with its analysis, computing it once if needed.

    Raises ReferenceError when the reference program fails (stored on the variant too).
    """
    digest = reference_hash(assignment=assignment, params=params)
    variant = _variant_row(assignment=assignment, params=params, digest=digest)
    if variant.analysis is None:
        _variant_compute(variant=variant)
    return variant


def variant_row(*, assignment: Assignment, params: dict[str, Any]) -> Variant:
    """The variant row for these parameters, without computing its analysis."""
    digest = reference_hash(assignment=assignment, params=params)
    return _variant_row(assignment=assignment, params=params, digest=digest)


def _variant_row(*, assignment: Assignment, params: dict[str, Any], digest: str) -> Variant:
    try:
        variant, _ = Variant.objects.get_or_create(
            assignment=assignment, reference_hash=digest, defaults={"params": params}
        )
    except IntegrityError:  # a concurrent worker created it first
        variant = Variant.objects.get(assignment=assignment, reference_hash=digest)
    return variant


def _variant_compute(*, variant: Variant) -> None:
    assignment = variant.assignment
    keys = list(assignment.parts.filter(kind="numeric").values_list("key", flat=True))
    try:
        analysis = get_runner().analyze(program=assignment.reference_program, params=variant.params, parts=keys)
    except ReferenceError as exc:
        Variant.objects.filter(id=variant.id).update(error=str(exc))
        raise
    variant.analysis, variant.error, variant.computed_at = analysis, "", timezone.now()
    Variant.objects.filter(id=variant.id).update(
        analysis=analysis, error="", computed_at=variant.computed_at
    )
