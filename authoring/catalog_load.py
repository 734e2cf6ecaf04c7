"""Loading catalog files (`load_assignments` and the course page's import): a file is published
only when it passes vetting, as a new version; one that fails vetting is kept as a draft (or, for
an assignment already published, as its unpublished edits) with the reasons; one that cannot be
graded at all (malformed, the reference fails at the seed point or contradicts an authored
`expected` or formula) is refused and writes nothing.

Runs the reference programs in the sandbox: call from a command or a worker, never a web request.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from assignments.models import Assignment, Course
from authoring.catalog_check import assignment_reasons
from authoring.course_copy import copy_slug
from authoring.forms import catalog_json
from authoring.publishing import overrides_of, version_record
from authoring.reasons import Reason, reasons_open, warnings_of
from catalog.errors import CatalogError
from catalog.export import assignment_catalog
from catalog.spec import AssignmentSpec, catalog_data, spec_from_data
from catalog.upsert import assignment_upsert
from grading.outside_runs import runs_outside
from grading.reference import ReferenceRunError
from grading.variants import variant_get

PUBLISHED, UNCHANGED, DRAFT, DRAFT_EDITS, REFUSED = "published", "unchanged", "draft", "draft-edits", "refused"
STATE_NAMES = {PUBLISHED: "published", UNCHANGED: "unchanged", DRAFT: "kept as a draft",
               DRAFT_EDITS: "kept as unpublished edits", REFUSED: "refused"}


@dataclass(frozen=True)
class LoadOutcome:
    file: str
    slug: str
    state: str  # one of the five above
    version: int = 0  # the version published, for PUBLISHED
    lines: list[str] = field(default_factory=list)  # `file: field: problem`, for DRAFT…, REFUSED
    notes: list[str] = field(default_factory=list)  # the analysis' notes (e.g. capped path enumeration)

    def summary(self) -> str:
        """"unchanged detach (detach.toml)": the state's name, then `detail`."""
        return f"{STATE_NAMES[self.state]} {self.detail()}"

    def detail(self) -> str:
        """What the state applies to, shown after a badge naming the state (never the state twice)."""
        where = f"({self.file})"
        return {PUBLISHED: f"{self.slug} {where} as v{self.version}",
                UNCHANGED: f"{self.slug} {where}",
                DRAFT: f"{self.slug} {where}: not published",
                DRAFT_EDITS: f"{self.slug} {where}: students keep the published version",
                REFUSED: f"{where}: nothing loaded"}[self.state]


class _Refused(Exception):
    def __init__(self, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines


class _Vetoed(Exception):
    def __init__(self, reasons: list[Reason]) -> None:
        super().__init__("; ".join(r.problem for r in reasons))
        self.reasons = reasons


def catalog_file_load(*, name: str, raw: bytes, course: Course, user: AbstractBaseUser | None = None,
                      vet: bool = True, other_courses: bool = True) -> LoadOutcome:
    """Load one file into `course`. An existing slug of another course keeps its course when
    `other_courses` (the command line), else the file becomes this course's copy under a slug of its
    own. `vet=False` runs nothing and keeps new content as drafts."""
    try:
        data, spec = _parsed(name, raw)
        existing = Assignment.objects.filter(slug=spec.slug).first()
        copied_from = ""
        if existing is not None and existing.course_id != course.pk and not other_courses:
            # Another course's assignment (an export of last term's course): imported as this course's
            # copy, under the slug copy_course gives it, and never touching the other course.
            copied_from = spec.slug
            raw = _slug_replaced(raw, spec.slug, copy_slug(slug=spec.slug, course_slug=course.slug))
            data, spec = _parsed(name, raw)
            existing = Assignment.objects.filter(slug=spec.slug).first()
            if existing is not None and existing.course_id != course.pk:
                taken = f"{name}: slug: {copied_from!r} and its copy {spec.slug!r} belong to other courses"
                return LoadOutcome(file=name, slug=spec.slug, state=REFUSED, lines=[taken])
    except CatalogError as exc:
        return LoadOutcome(file=name, slug="", state=REFUSED, lines=[str(exc)])
    outcome = _loaded(name=name, raw=raw, data=data, spec=spec, course=course, user=user, vet=vet, existing=existing)
    if copied_from:
        note = f"{copied_from!r} belongs to another course: loaded as this course's {spec.slug!r}"
        outcome = replace(outcome, notes=[note, *outcome.notes])
    return outcome


def _parsed(name: str, raw: bytes) -> tuple[dict[str, Any], AssignmentSpec]:
    """The file's catalog data and its validated spec. Raises CatalogError."""
    data = catalog_data(name, raw)
    return data, spec_from_data(data, path=name, source_hash=hashlib.sha256(raw).hexdigest())


def _slug_replaced(raw: bytes, old: str, new: str) -> bytes:
    """The file with its top-level `slug = "…"` line naming `new` (the rest, comments included, as written)."""
    line = re.compile(rb"""^(slug\s*=\s*)(["'])""" + re.escape(old.encode()) + rb"""\2""", re.MULTILINE)
    return line.sub(lambda match: match.group(1) + match.group(2) + new.encode() + match.group(2), raw, count=1)


def _loaded(*, name: str, raw: bytes, data: dict[str, Any], spec: AssignmentSpec, course: Course,
            user: AbstractBaseUser | None, vet: bool, existing: Assignment | None) -> LoadOutcome:
    if not vet:
        return _keep_draft(spec=spec, data=data, course=course, existing=existing,
                           lines=[f"{name}: reference: not vetted (--no-check): publish it from the staff pages"])
    if existing is not None and _unchanged(existing, spec):
        return LoadOutcome(file=name, slug=spec.slug, state=UNCHANGED, notes=_notes(existing))
    try:
        return _publish(spec=spec, raw=raw, course=course, user=user)
    except _Refused as exc:
        return LoadOutcome(file=name, slug=spec.slug, state=REFUSED, lines=exc.lines)
    except _Vetoed as exc:
        return _keep_draft(spec=spec, data=data, course=course, existing=existing,
                           lines=[reason.line(name) for reason in exc.reasons])
    except (TypeError, ValueError) as exc:  # a value the validation did not foresee
        return LoadOutcome(file=name, slug=spec.slug, state=REFUSED, lines=[f"{name}: {type(exc).__name__}: {exc}"])


def _unchanged(existing: Assignment, spec: AssignmentSpec) -> bool:
    """Published, with nothing pending, and the file says what it holds: the same text, or the same
    content written otherwise (its own export, whose TOML is laid out anew)."""
    if not (existing.published and existing.draft is None and existing.archived_at is None):
        return False
    if spec.source_hash and existing.source_hash == spec.source_hash:
        return True
    try:
        held = spec_from_data(assignment_catalog(assignment=existing), path=spec.path, source_hash=spec.source_hash)
    except CatalogError:
        return False
    return held == spec


def _notes(assignment: Assignment) -> list[str]:
    try:
        return list(variant_get(assignment=assignment, params=assignment.params).analysis_data().get("notes", []))
    except ReferenceRunError:
        return []


def _publish(*, spec: AssignmentSpec, raw: bytes, course: Course, user: AbstractBaseUser | None) -> LoadOutcome:
    """Upsert, vet and publish in one transaction; raises _Refused or _Vetoed after rolling it back.
    The reference runs happen between passes with no transaction open (grading/outside_runs.py): the
    pass that commits only reads their answers, so what it publishes is what was vetted."""
    return runs_outside(lambda: _publish_pass(spec=spec, raw=raw, course=course, user=user))


def _publish_pass(*, spec: AssignmentSpec, raw: bytes, course: Course, user: AbstractBaseUser | None) -> LoadOutcome:
    with transaction.atomic():
        assignment, _created = assignment_upsert(spec=spec, course=course)
        try:
            notes = variant_get(assignment=assignment, params=assignment.params).analysis_data().get("notes", [])
        except ReferenceRunError as exc:
            raise _Refused([f"{spec.path}: reference: {exc}"]) from None
        reasons = assignment_reasons(assignment=assignment)
        mismatches = [reason.line(spec.path) for reason in reasons if reason.code.startswith("mismatch:")]
        if mismatches:
            raise _Refused(mismatches)
        refused = reasons_open(reasons=reasons, accepted=spec.accepted)
        if refused:
            raise _Vetoed(refused)
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        version = version_record(assignment=locked, catalog=raw.decode("utf-8"), user=user,
                                 overrides=overrides_of(reasons=reasons, accepted=spec.accepted))
    warned = [f"warning: {reason.field}: {reason.problem}" for reason in warnings_of(reasons)]
    return LoadOutcome(file=spec.path, slug=spec.slug, state=PUBLISHED, version=version.number,
                       notes=[*notes, *warned])


def _keep_draft(*, spec: AssignmentSpec, data: dict[str, Any], course: Course, existing: Assignment | None,
                lines: list[str]) -> LoadOutcome:
    """A live version stays live (the file becomes its unpublished edits); anything else is a draft."""
    if existing is not None and (existing.published or existing.version > 0):
        Assignment.objects.filter(pk=existing.pk).update(draft=catalog_json(data))
        return LoadOutcome(file=spec.path, slug=spec.slug, state=DRAFT_EDITS, lines=lines)
    with transaction.atomic():
        assignment, _created = assignment_upsert(spec=spec, course=course)
        Assignment.objects.filter(pk=assignment.pk).update(published=False)
    return LoadOutcome(file=spec.path, slug=spec.slug, state=DRAFT, lines=lines)
