"""A catalog file's assignment written to the database: created, or updated in place by slug."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from assignments.models import Assignment, Course, Part
from catalog.spec import AssignmentSpec


@transaction.atomic
def assignment_upsert(*, spec: AssignmentSpec, course: Course) -> tuple[Assignment, bool]:
    """Create or update the assignment with this slug. Submissions are never touched."""
    assignment, created = Assignment.objects.update_or_create(
        slug=spec.slug, defaults=_assignment_fields(spec=spec), create_defaults={
            **_assignment_fields(spec=spec), "course": course}  # a moved assignment stays in its course
    )
    for order, part in enumerate(spec.parts):
        Part.objects.update_or_create(
            assignment=assignment,
            key=part.key,
            defaults={
                "kind": part.kind, "order": order, "points": part.points, "rel_tol": part.rel_tol,
                "abs_tol": part.abs_tol, "hint": part.hint, "prompt": part.prompt,
                "expected": {"value": part.expected} if part.has_expected else None,
                "config": part.config.to_json(),
            },
        )
    assignment.parts.exclude(key__in=[p.key for p in spec.parts]).delete()
    return assignment, created


def _assignment_fields(*, spec: AssignmentSpec) -> dict[str, Any]:
    policy = spec.policy
    return {
        "title": spec.title, "statement": spec.statement, "params": spec.params,
        "variant_ranges": spec.variants, "reference_program": spec.reference,
        "opens_at": policy.get("opens_at"), "due_at": policy.get("due_at"),
        "closes_at": policy.get("closes_at"), "max_attempts": policy.get("max_attempts"),
        "counts": policy["counts"], "late_penalty": policy["late_penalty"],
        "time_zone": policy.get("time_zone", "UTC"), "rate_limit": policy.get("rate_limit"),
        "hints_after": policy.get("hints_after", 0), "reveal": policy.get("reveal", "never"),
        "release_before": policy.get("release_before"), "release_after": policy.get("release_after"),
        "source_path": spec.path, "source_hash": spec.source_hash,
    }
