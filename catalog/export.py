"""Assignments and courses as catalog TOML (course as code): the inverse of `catalog.spec`.

`assignment_catalog` gives the data `spec_from_data` accepts, so export → import is lossless:
every field the loader reads is written, and nothing else.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

import tomli_w

from assignments.models import Assignment, Course, Part

COURSE_FILE = "course.toml"


def assignment_catalog(*, assignment: Assignment) -> dict[str, Any]:
    data: dict[str, Any] = {
        "slug": assignment.slug, "title": assignment.title, "statement": assignment.statement,
        "reference": assignment.reference_program, "params": dict(assignment.params),
        "policy": _policy(assignment), "parts": [_part(part) for part in assignment.parts.all()],
    }
    if assignment.variant_ranges:
        data["variants"] = dict(assignment.variant_ranges)
    accepted = _accepted(assignment)
    if accepted:
        data["vetting"] = {"accept": accepted}
    return data


def _accepted(assignment: Assignment) -> dict[str, str]:
    """The vetting reasons the live version was published over, with their written justifications,
    so an imported copy publishes on the same terms."""
    latest = assignment.versions.order_by("-number").first()
    return {o["code"]: o["justification"] for o in (latest.overrides if latest else []) if o.get("justification")}


def _policy(assignment: Assignment) -> dict[str, Any]:
    policy: dict[str, Any] = {"counts": assignment.counts, "late_penalty": assignment.late_penalty,
                              "time_zone": assignment.time_zone, "hints_after": assignment.hints_after,
                              "reveal": assignment.reveal}
    for name in ("opens_at", "due_at", "closes_at", "max_attempts", "rate_limit", "release_before", "release_after"):
        value = getattr(assignment, name)
        if value is not None:
            policy[name] = value
    return policy


def _part(part: Part) -> dict[str, Any]:
    data: dict[str, Any] = {"key": part.key, "kind": part.kind, "points": part.points, "rel_tol": part.rel_tol,
                            "abs_tol": part.abs_tol}
    for name in ("hint", "prompt"):
        if getattr(part, name):
            data[name] = getattr(part, name)
    if part.expected is not None and part.expected.get("value") is not None:
        data["expected"] = part.expected["value"]
    if part.config:
        data["config"] = part.config
    return data


def catalog_toml(*, data: dict[str, Any]) -> str:
    """TOML text; a `None` expected value (an untracked leaf) is written as the string the loader reads."""
    cleaned = dict(data)
    cleaned["parts"] = [
        {**part, "expected": "None"} if "expected" in part and part["expected"] is None else part
        for part in data["parts"]
    ]
    return tomli_w.dumps(cleaned, multiline_strings=True)


def assignment_toml(*, assignment: Assignment) -> str:
    return catalog_toml(data=assignment_catalog(assignment=assignment))


def course_toml(*, course: Course) -> str:
    return tomli_w.dumps({"course": {"slug": course.slug, "title": course.title,
                                     "release_before": course.release_before, "release_after": course.release_after}})


def course_files(*, course: Course) -> dict[str, str]:
    """File name → text: the course's live assignments (archived ones stay out) and course.toml."""
    files = {COURSE_FILE: course_toml(course=course)}
    for assignment in course.assignments.filter(archived_at=None).prefetch_related("parts"):
        files[f"{assignment.slug}.toml"] = assignment_toml(assignment=assignment)
    return files


def files_zip(*, files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in sorted(files.items()):
            archive.writestr(name, text)
    return buffer.getvalue()
