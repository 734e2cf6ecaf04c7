"""One assignment copied into another course: what a new term's copy and an LMS-made course's start both do.

Assignment slugs are unique across the server and are the assignments' URLs, so a copy takes a new slug
(`<slug>-<course slug>`) and the source keeps every URL, API path and LMS link it had."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from assignments.models import Assignment, AssignmentVersion, Course, Part, Variant

SLUG_MAX = 50  # Django's SlugField default, the length of Course.slug and Assignment.slug
DATES = ("opens_at", "due_at", "closes_at")


def copy_slug(*, slug: str, course_slug: str) -> str:
    """`<slug>-<course slug>`, shortened with a digest when it would pass the slug length."""
    candidate = f"{slug}-{course_slug}"
    if len(candidate) <= SLUG_MAX:
        return candidate
    digest = hashlib.sha256(f"{slug}\0{course_slug}".encode()).hexdigest()[:8]
    return f"{slug[:SLUG_MAX - len(digest) - 1].rstrip('-')}-{digest}"


def assignment_copy(source: Assignment, *, course: Course, slug: str, shift: timedelta) -> Assignment:
    """A new row of `source` in `course` under `slug`: its parts, computed variants (no reference run
    again) and version history, its dates moved by `shift`; no submissions, extensions or LMS links."""
    parts = list(source.parts.all())
    variants = list(source.variants.filter(computed_at__isnull=False, error=""))
    versions = list(source.versions.all())
    copy = Assignment.objects.get(pk=source.pk)  # a fresh instance to save as a new row
    copy.pk = copy.id = None
    copy.course, copy.slug, copy.draft = course, slug, None
    copy.source_path = copy.source_hash = ""  # not a catalog file's row: load_assignments leaves it alone
    for name in DATES:
        value = getattr(copy, name)
        setattr(copy, name, value + shift if value is not None else None)
    copy.save()
    Part.objects.bulk_create([Part(assignment=copy, key=p.key, kind=p.kind, order=p.order, prompt=p.prompt,
                                   points=p.points, rel_tol=p.rel_tol, abs_tol=p.abs_tol, hint=p.hint,
                                   expected=p.expected, config=p.config) for p in parts])
    Variant.objects.bulk_create([Variant(assignment=copy, params=v.params, reference_hash=v.reference_hash,
                                         analysis=v.analysis, point_analyses=v.point_analyses,
                                         computed_at=v.computed_at) for v in variants])  # no reference run again
    AssignmentVersion.objects.bulk_create([
        AssignmentVersion(assignment=copy, number=v.number, catalog=v.catalog, overrides=v.overrides,
                          published_by_id=v.published_by_id, published_at=v.published_at) for v in versions])
    return copy
