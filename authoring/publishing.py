"""Writes of the authoring pages: courses, staff, drafts, publishing, copies, archiving (imports:
catalog_load.py).

Preconditions: the caller checked the role with `assignments.access` (instructor of the course).
A published assignment is never changed by a save: edits wait in `draft` until the next publish,
so students keep grading against the version they see.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction

from assignments.access import may_create_courses
from assignments.models import RELEASES, Assignment, AssignmentVersion, Course, Extension, Membership
from assignments.services import membership_set
from authoring.forms import catalog_from_json, catalog_json
from authoring.reasons import Reason, reasons_open, warnings_of
from authoring.vetting import assignment_vet
from catalog.errors import CatalogError
from catalog.export import assignment_catalog, catalog_toml
from catalog.spec import DATE_YEARS, AssignmentSpec, date_storable, spec_from_data
from catalog.upsert import assignment_upsert
from grading.outside_runs import runs_outside
from infra import clock

T = TypeVar("T")
EDITED_MEANWHILE = ("was edited while it was being vetted: nothing was published; publish again to vet "
                    "and publish the edited version")
MAX_JUSTIFICATION = 2000  # characters of one written justification a version keeps (form and API)


class PublishRefused(Exception):
    def __init__(self, reasons: list[Reason]) -> None:
        super().__init__("; ".join(r.problem for r in reasons))
        self.reasons = reasons


class _RollBack(Exception):
    pass


class SlugTaken(Exception):
    """Another course has this slug."""


def course_create(*, user: AbstractBaseUser, slug: str, title: str) -> Course:
    """A new course with the user as its instructor. Raises PermissionDenied unless the user may create
    courses (GRADER_COURSE_CREATORS), SlugTaken when the slug is in use."""
    if not may_create_courses(user=user):
        raise PermissionDenied("This user may not create courses.")
    try:
        with transaction.atomic():
            course = Course.objects.create(slug=slug, title=title)
            membership_set(user=user, course=course, role=Membership.Role.INSTRUCTOR)
    except IntegrityError as exc:
        raise SlugTaken(slug) from exc
    return course


def staff_add(*, course: Course, username: str, role: str) -> Membership:
    """Raises ValueError for an unknown user name or a role other than TA/instructor/student."""
    if role not in Membership.Role.values:
        raise ValueError(f"unknown role {role!r}")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ValueError(f"no user named {username!r}: they must have an account first")
    return membership_set(user=user, course=course, role=role)


def course_release_set(*, course: Course, release_before: str, release_after: str) -> Course:
    """The course's default feedback levels (an assignment's own, when set, wins). Raises ValueError
    naming the field of a level that is not one."""
    for name, level in (("release_before", release_before), ("release_after", release_after)):
        if level not in RELEASES:
            raise ValueError(f"{name}: must be one of {', '.join(RELEASES)}, got {str(level)[:40]!r}")
    course.release_before, course.release_after = release_before, release_after
    course.save(update_fields=["release_before", "release_after"])
    return course


def working_catalog(*, assignment: Assignment) -> dict[str, Any]:
    """What the edit form shows: the pending draft, else the assignment as it is."""
    if assignment.draft is not None:
        return catalog_from_json(assignment.draft)
    return assignment_catalog(assignment=assignment)


def assignment_create(*, course: Course, data: dict[str, Any]) -> Assignment:
    """A new unpublished assignment. Raises CatalogError."""
    spec = spec_from_data(data, path="form")
    if Assignment.objects.filter(slug=spec.slug).exists():
        raise CatalogError("form", "slug", f"{spec.slug!r} is taken by another assignment")
    with transaction.atomic():
        assignment, _ = assignment_upsert(spec=spec, course=course)
        Assignment.objects.filter(pk=assignment.pk).update(published=False, source_path="")
    assignment.refresh_from_db()
    return assignment


def assignment_save(*, assignment: Assignment, data: dict[str, Any]) -> Assignment:
    """Save edits: straight onto a never-published assignment, else into its draft. Raises CatalogError."""
    spec = spec_for(assignment=assignment, data=data)
    if assignment.version == 0 and not assignment.published:
        with transaction.atomic():
            assignment_upsert(spec=spec, course=assignment.course)
            Assignment.objects.filter(pk=assignment.pk).update(draft=None)
    else:
        Assignment.objects.filter(pk=assignment.pk).update(draft=catalog_json(data))
    assignment.refresh_from_db()
    return assignment


def spec_for(*, assignment: Assignment, data: dict[str, Any]) -> AssignmentSpec:
    spec = spec_from_data(data, path="form")
    if spec.slug != assignment.slug:
        raise CatalogError("form", "slug", "cannot change; duplicate the assignment to get a new slug")
    return spec


def staged(*, assignment: Assignment, data: dict[str, Any] | None, work: Callable[[Assignment], T]) -> T:
    """Run `work` on the assignment with `data` applied, then roll everything back (preview, vetting).

    The reference runs and sandbox jobs `work` asks for are done between short passes, never inside
    the staging transaction (grading/outside_runs.py): a slow reference holds no database lock."""

    def one_pass() -> T:
        box: list[T] = []
        try:
            with transaction.atomic():
                if data is not None:
                    assignment_upsert(spec=spec_for(assignment=assignment, data=data), course=assignment.course)
                staged_row = Assignment.objects.select_related("course").get(pk=assignment.pk)
                box.append(work(staged_row))
                raise _RollBack
        except _RollBack:
            pass
        return box[0]

    return runs_outside(one_pass)


def assignment_vet_working(*, assignment: Assignment) -> list[Reason]:
    return staged(assignment=assignment, data=working_catalog(assignment=assignment),
                  work=lambda row: assignment_vet(assignment=row))


def assignment_publish(
    *, assignment: Assignment, user: AbstractBaseUser | None, justifications: dict[str, str],
    warned: list[Reason] | None = None,
) -> AssignmentVersion:
    """Vet the working copy and make it live as a new version. Raises PublishRefused listing every
    reason no justification accepts, or CatalogError. `warned`, when given, receives vetting's warnings
    (they never block)."""
    data = working_catalog(assignment=assignment)
    spec = spec_for(assignment=assignment, data=data)
    accepted = {**spec.accepted, **{k: v.strip() for k, v in justifications.items() if v.strip()}}
    reasons = assignment_vet_working(assignment=assignment)  # no transaction held while the reference runs
    refused = reasons_open(reasons=reasons, accepted=accepted)
    if refused:
        raise PublishRefused(refused)
    if warned is not None:
        warned.extend(warnings_of(reasons))
    with transaction.atomic():  # brief: the vetted copy becomes live unless someone edited it meanwhile
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if _edited_since(read=assignment, locked=locked):
            raise CatalogError("form", "assignment", EDITED_MEANWHILE)
        assignment_upsert(spec=spec, course=locked.course)
        return version_record(assignment=locked, catalog=catalog_toml(data=data), user=user,
                              overrides=overrides_of(reasons=reasons, accepted=accepted))


def _edited_since(*, read: Assignment, locked: Assignment) -> bool:
    """Whether the assignment changed after `read` was loaded: saved edits, a draft, another publish."""
    return (locked.updated_at != read.updated_at or locked.version != read.version
            or locked.draft != read.draft or locked.archived_at != read.archived_at)


def overrides_of(*, reasons: list[Reason], accepted: dict[str, str]) -> list[dict[str, str]]:
    """What a version keeps of the vetting reasons its publisher accepted in writing."""
    return [{"code": r.code, "field": r.field, "problem": r.problem, "justification": accepted[r.code]}
            for r in reasons if not r.warning]


def version_record(*, assignment: Assignment, catalog: str, user: AbstractBaseUser | None,
                   overrides: list[dict[str, str]]) -> AssignmentVersion:
    """Make the assignment's current rows live as its next version. Call inside a transaction
    holding the assignment's row (select_for_update)."""
    number = assignment.version + 1
    version = AssignmentVersion.objects.create(assignment=assignment, number=number, catalog=catalog,
                                               overrides=overrides, published_by=user, published_at=clock.now())
    Assignment.objects.filter(pk=assignment.pk).update(published=True, draft=None, version=number)
    return version


def assignment_duplicate(*, assignment: Assignment, slug: str, title: str) -> Assignment:
    """An unpublished copy under a new slug (no submissions, no versions). Raises CatalogError."""
    data = {**working_catalog(assignment=assignment), "slug": slug, "title": title}
    assert assignment.course is not None
    return assignment_create(course=assignment.course, data=data)


def assignment_delete(*, assignment: Assignment) -> str:
    """Delete an assignment nobody submitted to; archive one with submissions: hidden from students
    and exports, every submission and result kept, published or not as it was (for a restore)."""
    if assignment.submissions.exists():
        Assignment.objects.filter(pk=assignment.pk).update(archived_at=clock.now())
        return "archived"
    assignment.delete()
    return "deleted"


def assignment_restore(*, assignment: Assignment) -> Assignment:
    """Bring an archived assignment back as it was when archived, with all its submissions."""
    Assignment.objects.filter(pk=assignment.pk).update(archived_at=None)
    assignment.refresh_from_db()
    return assignment


def extension_set(*, assignment: Assignment, username: str, due_at: str, extra_attempts: str,
                  reason: str) -> Extension:
    """Raises ValueError for a user who is not a student of the course or unreadable values.
    `due_at` is local time in the assignment's time zone (YYYY-MM-DDTHH:MM), empty to keep the deadline."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    student = Membership.objects.filter(course=assignment.course, user__username=username,
                                        role=Membership.Role.STUDENT).select_related("user").first()
    if student is None:
        raise ValueError(f"{username!r} is not a student of this course")
    try:
        due = datetime.fromisoformat(due_at).replace(tzinfo=ZoneInfo(assignment.time_zone)) if due_at else None
        extra = int(extra_attempts or 0)
    except ValueError:
        raise ValueError("give the new due date as YYYY-MM-DDTHH:MM and extra attempts as a whole number") from None
    if due is not None and not date_storable(due):
        raise ValueError(f"the new due date must be in the years {DATE_YEARS[0]} to {DATE_YEARS[1]}")
    if extra < 0 or extra > 1000:
        raise ValueError("extra attempts must be from 0 to 1000")
    extension, _ = Extension.objects.update_or_create(
        assignment=assignment, student=student.user,
        defaults={"due_at": due, "closes_at": max(due, assignment.closes_at) if due and assignment.closes_at else None,
                  "extra_attempts": extra, "reason": reason[:200]})
    return extension


def extension_remove(*, assignment: Assignment, username: str) -> bool:
    """Remove the student's extension of this assignment; False when there was none."""
    deleted, _ = Extension.objects.filter(assignment=assignment, student__username=username).delete()
    return deleted > 0
