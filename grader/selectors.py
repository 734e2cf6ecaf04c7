"""Reads for the student pages and the API: what a user may see, and nothing more.

Visibility rules live here only: a student sees the published assignments of their
courses and their own submissions; an instructor of a course also sees its unpublished
assignments, every submission to it and all of each result document; a student sees of the
feedback on their own submissions what the assignment's release level says now (`release_for`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeAlias

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import connection
from django.db.models import Count, Exists, F, Max, OuterRef, Q, QuerySet, Subquery

from assignments.access import STAFF_ROLES, is_course_staff
from assignments.models import Assignment, Extension, Membership, Part, Release, release_at_least
from chainrule.result import counted_score, verdict
from grader.models import Result, Submission
from grader.policy import (
    LOOKUP,
    Known,
    StudentPolicy,
    attempts_left,
    extension_of,
    extra_attempts,
    is_opened,
    release_now,
    student_policy,
)
from grading.answer_key import AnswerKey, answer_key
from grading.variants import params_for_student
from infra.prepared import prefetched, prepared_query

User: TypeAlias = "AbstractBaseUser | AnonymousUser"
STUDENT_ERROR = "Grading failed for a reason on our side. This attempt was not counted; please submit again."


RELEASE_WORDS = {
    Release.VERDICT: "the verdict only",
    Release.WORDS: "the verdict and what went wrong",
    Release.PICTURE: "the verdict, what went wrong and a picture of it",
    Release.FULL_PICTURE: "the verdict, what went wrong and the whole picture",
    Release.ANSWER_KEY: "everything, the expected answers too",
}
REVEAL_WORDS = {
    Assignment.Reveal.AFTER_DUE: "after your due date",
    Assignment.Reveal.AFTER_CLOSE: "after the assignment closes",
    Assignment.Reveal.AFTER_ATTEMPTS: "once you have used all your attempts",
}


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
    release: str = Release.VERDICT  # the feedback level this user gets now (a Release)

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
    def feedback_words(self) -> str:
        """What a wrong attempt shows this student now and, if it changes, from when and what then."""
        now = RELEASE_WORDS[Release(self.release)]
        after = self.assignment.releases[1]
        moment = REVEAL_WORDS.get(Assignment.Reveal(self.assignment.reveal))
        if moment is None or after == self.release:
            return now
        return f"{now}; {moment}: {RELEASE_WORDS[Release(after)]}"

    @property
    def expected_shown(self) -> bool:
        """Opened, and the release level lets this user see the expected answers now."""
        return self.opened and release_at_least(self.release, Release.ANSWER_KEY)

    @property
    def hints_shown(self) -> bool:
        return self.attempts_used >= self.assignment.hints_after


def assignments_visible(*, user: User) -> QuerySet[Assignment]:
    """Published assignments of the user's courses, plus every assignment of courses they teach."""
    return _visible_to(user.pk)


# An attempt still queued or running reveals nothing yet: an infrastructure failure gives it back, and a
# key seen before that would be seen with an attempt still to use.
PENDING = (Submission.Status.QUEUED, Submission.Status.RUNNING)


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
        pending=Count("submissions", filter=mine & Q(submissions__attempt__isnull=False,
                                                      submissions__status__in=PENDING)),
        best_graded=Max("submissions__result__score", filter=mine),
        last_graded=Subquery(latest.order_by("-submission__created_at").values("score")[:1]),
    ).prefetch_related("parts").order_by("course__title", F("due_at").asc(nulls_last=True), "title")  # as PostgreSQL
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
        release=release_now(assignment=a, policy=policy, attempts_left=None if a.pending else left),
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


def release_for(*, user: User, assignment: Assignment) -> str:
    """The feedback level (a Release) this student gets now, by their own dates, extension and attempts.
    Reads only what the level needs: nothing when both levels are the same, the attempts only for a
    reveal "after_attempts"."""
    before, after = assignment.releases
    if before == after or assignment.reveal == Assignment.Reveal.NEVER:
        return before
    extension = extension_of(assignment=assignment, student_id=user.pk)
    left = None
    if assignment.reveal == Assignment.Reveal.AFTER_ATTEMPTS:
        counted = Submission.objects.filter(student_id=user.pk, assignment=assignment, attempt__isnull=False)
        if not counted.filter(status__in=PENDING).exists():  # the last attempt reveals once it is graded
            left = attempts_left(assignment=assignment, used=counted.count(),
                                 extra=extra_attempts(assignment=assignment, student_id=user.pk, extension=extension))
    policy = student_policy(assignment=assignment, student_id=user.pk, extension=extension)
    return release_now(assignment=assignment, policy=policy, attempts_left=left)


def viewer_is_staff(*, user: User, submission: Submission) -> bool:
    """is_course_staff (instructor or TA: they grade, so they see expected values and reasons) for the
    submission's course, read from the row when submission_visible fetched it (`viewer_staff`), else asked."""
    staff = getattr(submission, "viewer_staff", None)
    return is_course_staff(user=user, course_id=submission.assignment.course_id) if staff is None else bool(staff)


def release_of(*, user: User, submission: Submission) -> str:
    """The feedback level on this submission: everything for the course's staff, the release level
    for the student who made it, the verdict alone for anyone else."""
    if viewer_is_staff(user=user, submission=submission):
        return Release.ANSWER_KEY
    if submission.student_id != user.pk:
        return Release.VERDICT
    return release_for(user=user, assignment=submission.assignment)


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


HISTORY_LIMIT = 200  # the most of submissions_mine a page or the API lists


def submissions_mine(*, user: User, assignment: Assignment) -> QuerySet[Submission]:
    """My submission history for one assignment, newest first."""
    return Submission.objects.filter(student_id=user.pk, assignment=assignment).select_related("result")


RELEASED_FROM = {  # the level from which a key of a part's document is shown; any other: always
    "diagnosis": Release.WORDS,  # the words: message, paths, edge, lines
    "graph_svg_url": Release.PICTURE,
    "expected": Release.ANSWER_KEY, "expected_text": Release.ANSWER_KEY,  # as a value and as written
}


def result_document(*, submission: Submission, release: str) -> dict[str, Any] | None:
    """The stored result document of SPEC §5 as the release level shows it (`document_released`)."""
    result = getattr(submission, "result", None)
    if submission.status != Submission.Status.GRADED or result is None:
        return None
    document = document_released(document=result.document, release=release)
    document["score"] = counted_score(result.document)  # after the late factor: the Result's score
    return document


def document_released(*, document: dict[str, Any], release: str) -> dict[str, Any]:
    """A result document as the release level shows it: each part's verdict and score always; the
    diagnosis from "words"; the picture's address from "picture"; the expected values at "answer_key"."""
    parts = [{**{key: value for key, value in part.items()
                  if release_at_least(release, RELEASED_FROM.get(key, Release.VERDICT))}, "verdict": verdict(part)}
             for part in document["parts"]]
    return {**document, "parts": parts}


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
