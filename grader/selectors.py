"""Reads for the student pages and the API: what a user may see, and nothing more.

Visibility rules live here only: a student sees the published assignments of their
courses and their own submissions; an instructor of a course also sees its unpublished
assignments, every submission to it and the expected values in result documents; a student
sees the expected values once the assignment's reveal policy allows (`expected_shown_for`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeAlias

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet, Subquery

from assignments.access import STAFF_ROLES, is_course_staff
from assignments.models import Assignment, Extension, Membership, Part
from chainrule.result import counted_score
from grader.models import Result, Submission
from grader.policy import (
    LOOKUP,
    Known,
    StudentPolicy,
    attempts_left,
    expected_shown_now,
    extension_of,
    extra_attempts,
    is_opened,
    student_policy,
)
from grading.answer_key import AnswerKey, answer_key
from grading.variants import params_for_student
from infra.prepared import prefetched, prepared_query

User: TypeAlias = "AbstractBaseUser | AnonymousUser"
STUDENT_ERROR = "Grading failed for a reason on our side. This attempt was not counted; please submit again."


@dataclass(frozen=True)
class AssignmentRow:
    """One line of "my courses and assignments"."""

    assignment: Assignment
    attempts_used: int
    attempts_left: int | None  # None: unlimited
    best_score: float | None  # None: nothing graded yet
    max_score: float
    your_values: dict[str, Any] = field(default_factory=dict)  # parameters drawn for this student
    policy: StudentPolicy | None = None  # the rules for this student (with their extension)
    opened: bool = True  # False before opens_at: neither statement nor parts are served
    expected_shown: bool = False  # opened, and the reveal policy lets this user see the expected answers now

    @property
    def attempts_allowed(self) -> int | None:
        """This student's attempts in all, their extension's extra attempts included (None: unlimited):
        every page says "N of this"."""
        return self.policy.max_attempts if self.policy else self.assignment.max_attempts

    @property
    def due_at(self) -> datetime | None:
        return self.policy.due_at if self.policy else self.assignment.due_at

    @property
    def statement(self) -> str:
        return self.assignment.statement if self.opened else ""

    @property
    def parts(self) -> list[dict[str, Any]]:
        """What students may read of each part: hints only after `hints_after` attempts,
        the options of a choice part but never which are right."""
        if not self.opened:
            return []
        return [
            {"key": p.key, "kind": p.kind, "points": p.points, "prompt": p.prompt,
             "hint": p.hint if self.hints_shown else "",
             "options": list(p.choice.options) if p.kind == "choice" else [],
             "multiple": p.choice.multiple if p.kind == "choice" else False}
            for p in self.assignment.parts.all()
        ]

    @property
    def hints_shown(self) -> bool:
        return self.attempts_used >= self.assignment.hints_after


def assignments_visible(*, user: User) -> QuerySet[Assignment]:
    """Published assignments of the user's courses, plus every assignment of courses they teach."""
    return _visible_to(user.pk)


def _visible_to(user_id: int | None) -> QuerySet[Assignment]:
    return Assignment.objects.filter(
        Q(course__in=Membership.objects.filter(user_id=user_id).values("course"), published=True)
        | Q(course__in=Membership.objects.filter(user_id=user_id, role__in=STAFF_ROLES).values("course"))
    ).filter(archived_at=None).select_related("course")


def assignment_rows(*, user: User, slug: str | None = None) -> list[AssignmentRow]:
    """The user's assignments (or the one with this slug) with attempts used and best score."""
    mine = Q(submissions__student_id=user.pk)
    latest = Result.objects.filter(submission__student_id=user.pk, submission__assignment=OuterRef("pk"))
    assignments = assignments_visible(user=user).annotate(
        used=Count("submissions", filter=mine & Q(submissions__attempt__isnull=False)),
        best_graded=Max("submissions__result__score", filter=mine),
        last_graded=Subquery(latest.order_by("-submission__created_at").values("score")[:1]),
    ).prefetch_related("parts").order_by("course__title", "due_at", "title")
    if slug is not None:
        assignments = assignments.filter(slug=slug)
    return [_row(a, user) for a in assignments]


def _row(a: Any, user: User) -> AssignmentRow:
    policy = student_policy(assignment=a, student_id=user.pk)
    left = attempts_left(assignment=a, used=a.used, extra=extra_attempts(assignment=a, student_id=user.pk))
    opened = is_course_staff(user=user, course_id=a.course_id) or is_opened(assignment=a)
    return AssignmentRow(
        assignment=a, attempts_used=a.used, attempts_left=left,
        best_score=a.last_graded if a.counts == Assignment.Counts.LAST else a.best_graded,
        max_score=sum(part.points for part in a.parts.all()), your_values=_drawn_values(a, user),
        policy=policy, opened=opened,
        expected_shown=opened and expected_shown_now(assignment=a, policy=policy, attempts_left=left),
    )


def _drawn_values(assignment: Assignment, user: User) -> dict[str, Any]:
    """The values of this student's variant for the parameters that vary (none for seed-only assignments)."""
    if not assignment.variant_ranges:
        return {}
    params = params_for_student(assignment=assignment, student_id=user.pk)
    return {name: params[name] for name in sorted(assignment.variant_ranges)}


@dataclass(frozen=True)
class Submittable:
    """An assignment the user may see, read for submitting to it: its parts, and the user's extension
    when they have none (None; most have none, and submitting then reads no extension row)."""

    assignment: Assignment
    extension: Known  # None: no extension; LOOKUP: the user has one, read it when needed


def assignment_to_submit(*, user: User, slug: str) -> Submittable | None:
    """One assignment the user may see (as assignment_rows decides), with what submitting needs, without
    the per-student figures of a row."""
    assignment: Assignment | None = _visible_by_slug.first(user_id=user.pk, slug=slug)
    if assignment is None:
        return None
    assignment_parts_attach(assignment)
    has_extension: bool = assignment.has_extension  # annotated by _visible_by_slug
    return Submittable(assignment=assignment, extension=LOOKUP if has_extension else None)


@prepared_query
def _visible_by_slug(user_id: int, slug: str) -> QuerySet[Assignment]:
    extension = Extension.objects.filter(assignment_id=OuterRef("pk"), student_id=user_id)
    return _visible_to(user_id).annotate(has_extension=Exists(extension)).filter(slug=slug)[:1]  # every submission


@prepared_query
def _parts_of(assignment_id: int) -> QuerySet[Part]:
    return Part.objects.filter(assignment_id=assignment_id)


def assignment_parts_attach(assignment: Assignment) -> None:
    """Read the assignment's parts into it, as prefetch_related("parts") would, by a prepared query."""
    prefetched(assignment, "parts", _parts_of(assignment_id=assignment.id))


def revealed_answer_key(*, row: AssignmentRow, user: User) -> AnswerKey | None:
    """The answer key of this user's own values when the reveal policy allows it now, else None."""
    if not row.expected_shown or user.pk is None:
        return None
    return answer_key(assignment=row.assignment, student_id=user.pk)


def assignment_row(*, user: User, slug: str) -> AssignmentRow | None:
    rows = assignment_rows(user=user, slug=slug)
    return rows[0] if rows else None


def expected_shown_for(*, user: User, assignment: Assignment) -> bool:
    """The reveal policy for this student now (their own dates, extension and attempts). Reads only
    what the assignment's `reveal` needs: nothing for "never", the attempts only for "after_attempts"."""
    if assignment.reveal == Assignment.Reveal.NEVER:
        return False
    extension = extension_of(assignment=assignment, student_id=user.pk)
    left = None
    if assignment.reveal == Assignment.Reveal.AFTER_ATTEMPTS:
        used = Submission.objects.filter(student_id=user.pk, assignment=assignment, attempt__isnull=False).count()
        left = attempts_left(assignment=assignment, used=used,
                             extra=extra_attempts(assignment=assignment, student_id=user.pk, extension=extension))
    policy = student_policy(assignment=assignment, student_id=user.pk, extension=extension)
    return expected_shown_now(assignment=assignment, policy=policy, attempts_left=left)


def viewer_is_staff(*, user: User, submission: Submission) -> bool:
    """is_course_staff (instructor or TA: they grade, so they see expected values and reasons) for the
    submission's course, read from the row when submission_visible fetched it (`viewer_staff`), else asked."""
    staff = getattr(submission, "viewer_staff", None)
    return is_course_staff(user=user, course_id=submission.assignment.course_id) if staff is None else bool(staff)


def expected_shown(*, user: User, submission: Submission) -> bool:
    """Expected values in this submission's result: for the course's staff always, for the student
    who made it once the reveal policy allows, for nobody else."""
    if viewer_is_staff(user=user, submission=submission):
        return True
    return submission.student_id == user.pk and expected_shown_for(user=user, assignment=submission.assignment)


def submissions_visible(*, user: User) -> QuerySet[Submission]:
    """The user's own submissions and every submission to a course they teach."""
    taught = Membership.objects.filter(user_id=user.pk, role__in=STAFF_ROLES).values("course")
    return Submission.objects.filter(Q(student_id=user.pk) | Q(assignment__course__in=taught)).select_related(
        "assignment", "result", "student"
    )


def submission_visible(*, user: User, submission_id: int) -> Submission | None:
    """One's own submission by the short query (what every status poll asks), else through the staff rule.
    The row carries `viewer_staff`: whether the user teaches its course (what is_course_staff would say)."""
    own: Submission | None = _own_submission.first(submission_id=submission_id, user_id=user.pk)
    if own is not None:
        return own
    return submissions_visible(user=user).annotate(viewer_staff=_staff_of_course(user.pk)).filter(
        id=submission_id).first()


def _staff_of_course(user_id: int | None) -> Exists:
    """For a query over submissions: whether the user teaches the submission's course."""
    return Exists(Membership.objects.filter(user_id=user_id, course_id=OuterRef("assignment__course_id"),
                                            role__in=STAFF_ROLES))


@prepared_query
def _own_submission(submission_id: int, user_id: int) -> QuerySet[Submission]:
    return Submission.objects.select_related("assignment", "result", "student").defer("assignment__draft").annotate(
        viewer_staff=_staff_of_course(user_id)).filter(id=submission_id, student_id=user_id)[:1]  # every poll


def submission_state(*, submission_id: int) -> str | None:
    """Just the status column, by the cheapest read there is (what a waiting request re-checks)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT status FROM {Submission._meta.db_table} WHERE id = %s", [submission_id])
        row = cursor.fetchone()
    return row[0] if row else None


EXPECTED_KEYS = ("expected", "expected_text")  # a part's expected answer, as a value and as written
HISTORY_LIMIT = 200  # the most of submissions_mine a page or the API lists


def submissions_mine(*, user: User, assignment: Assignment) -> QuerySet[Submission]:
    """My submission history for one assignment, newest first."""
    return Submission.objects.filter(student_id=user.pk, assignment=assignment).select_related("result")


def result_document(*, submission: Submission, expected_shown: bool) -> dict[str, Any] | None:
    """The stored result document of SPEC §5; expected values only when asked for."""
    result = getattr(submission, "result", None)
    if submission.status != Submission.Status.GRADED or result is None:
        return None
    document = dict(result.document)
    document["score"] = counted_score(result.document)  # after the late factor: the Result's score
    document["parts"] = [
        {key: value for key, value in part.items() if expected_shown or key not in EXPECTED_KEYS}
        for part in document["parts"]
    ]
    return document


def submission_error(*, submission: Submission, show_reason: bool) -> str | None:
    """Why grading failed. Students get a generic text: the reason may quote the reference program."""
    if submission.status != Submission.Status.ERROR:
        return None
    if show_reason and submission.error_reason:
        return submission.error_reason
    return STUDENT_ERROR


def health_report() -> dict[str, str]:
    """Reachability of what grading needs; "ok" or a short reason (no addresses or secrets)."""
    return {"database": _database_state(), "broker": _broker_state(), **_sandbox_state()}


_ready: tuple[float, dict[str, str]] | None = None  # (when, report): readiness checked once per interval


def readiness_report() -> dict[str, str]:
    """The database and the broker, as health_report says them, read at most once per
    GRADER_READY_CACHE_S seconds per process (a load balancer may probe every replica often)."""
    global _ready
    now = time.monotonic()
    if _ready is None or now - _ready[0] >= settings.GRADER_READY_CACHE_S:
        _ready = (now, {"database": _database_state(), "broker": _broker_state()})
    return dict(_ready[1])


def _database_state() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        return f"unreachable ({type(exc).__name__})"
    return "ok"


def _broker_state() -> str:
    from config.celery_app import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=2)
    except Exception as exc:
        return f"unreachable ({type(exc).__name__})"
    return "ok"


def _sandbox_state() -> dict[str, str]:
    """Code parts always need it, whatever runs the reference programs. Asked on each endpoint's status
    channel, which answers while every slot is busy (a busy sandbox is a working one)."""
    from infra.sandbox_pool import sandbox_status

    if not settings.SANDBOX_USED:
        return {"sandbox": "not used here"}
    states = list(sandbox_status().values())
    answering = [state for state in states if "error" not in state]
    if not answering:
        why = states[0]["error"].split(":", 1)[0] if len(states) == 1 else f"0 of {len(states)} endpoints"
        return {"sandbox": f"unreachable ({why})"}
    busy, slots = sum(s["busy"] for s in answering), sum(s["slots"] for s in answering)
    hosts = "" if len(states) == 1 else f", {len(answering)} of {len(states)} endpoints answering"
    return {"sandbox": "ok", "sandbox_load": f"{busy} of {slots} slots busy{hosts}"}
