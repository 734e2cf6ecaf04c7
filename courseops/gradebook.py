"""The gradebook: students × assignments with the counted score, attempts, late flag and extension.

Read in three queries whatever the course size: memberships, assignments with their points, and
every counted submission of the course as plain values; the counted score is picked in Python
with the same rule as the student's home page (best, or the last graded).
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import BooleanField, Case, Exists, F, OuterRef, Q, Subquery, Sum, When
from django.db.models.functions import Coalesce

from assignments.access import LMS_USERNAME_PREFIX, by_course_staff
from assignments.models import Assignment, Course, Extension, Membership
from assignments.selectors import by_title
from courseops.models import ScoreOverride
from grader.models import Submission


@dataclass
class Cell:
    score: float | None = None  # None: nothing graded
    attempts: int = 0
    late: bool = False
    overridden: bool = False
    regraded: bool = False
    submission_id: int | None = None  # the counted submission
    extended: bool = False  # this student has an extension (a later date and/or extra attempts)
    extension: datetime | None = None  # its due (or closing) date, if it moves one


@dataclass
class Row:
    user_id: int
    username: str
    name: str
    email: str
    section: str
    cells: list[Cell] = field(default_factory=list)
    first_name: str = ""
    last_name: str = ""
    sis_id: str = ""  # the school's id of the person, as the LMS gave it (LTI launch or roster sync)
    from_lms: bool = False  # an account the LMS made: its user name is ours, not the school's login

    @property
    def shown_name(self) -> str:
        """What staff read: the name, or the user name when there is none."""
        return self.name or self.username

    @property
    def sortable_name(self) -> str:
        """"Last, First", as Canvas writes its Student column."""
        if self.first_name and self.last_name:
            return f"{self.last_name}, {self.first_name}"
        return self.shown_name

    @property
    def login_id(self) -> str:
        """The user name, when it is the school's login (an account the LMS made has a name of ours)."""
        return "" if self.from_lms else self.username

    @property
    def total(self) -> float:
        return round(sum(cell.score or 0.0 for cell in self.cells), 6)


@dataclass
class Gradebook:
    course: Course
    assignments: list[Assignment]
    max_scores: list[float]
    rows: list[Row]


def _assignments(course: Course) -> list[Assignment]:
    """Published assignments, and any other that students have submitted to (unpublished since): a draft
    nobody can answer is no gradebook column, nor one only the course's staff tried in the student view."""
    submitted = Submission.objects.filter(~by_course_staff(), assignment=OuterRef("pk"))
    return by_title(Assignment.objects.filter(Q(published=True) | Exists(submitted), course=course)
                    .annotate(points=Sum("parts__points")))


# One counted submission's fields, as fetched: id, student, assignment, status, late, score.
Try = tuple[int, int, int, str, bool, "float | None"]


def _counted(tries: list[Try], counts: str) -> Try | None:
    """Ids grow with creation time, so the last graded is the largest id; ties of best: the first."""
    graded = [t for t in tries if t[5] is not None and t[3] == Submission.Status.GRADED]
    if not graded:
        return None
    if counts == Assignment.Counts.LAST:
        return max(graded, key=lambda t: t[0])
    return max(graded, key=lambda t: (t[5], -t[0]))


def _submission_values(course: Course, student_ids: Iterable[int] | None) -> list[Try]:
    """Plain tuples, the late flag computed by the database: no datetimes to convert per row."""
    rows = Submission.objects.filter(~by_course_staff(), assignment__course=course, attempt__isnull=False)
    if student_ids is not None:
        rows = rows.filter(student_id__in=list(student_ids))
    extended = Extension.objects.filter(assignment=OuterRef("assignment_id"), student=OuterRef("student_id"),
                                        due_at__isnull=False).values("due_at")[:1]
    due = Coalesce(Subquery(extended), F("assignment__due_at"))  # an extension's due date replaces the course's
    late = Case(When(Q(created_at__gt=due), then=True), default=False, output_field=BooleanField())
    return list(rows.annotate(late=late).values_list("id", "student_id", "assignment_id", "status", "late",
                                                     "result__score"))


def gradebook_read(*, course: Course, section: str = "", search: str = "") -> Gradebook:
    """Every student of the course (optionally one section, or matching `search`) as a row."""
    members = Membership.objects.filter(course=course, role=Membership.Role.STUDENT).select_related(
        "user", "user__lms_person")
    if section:
        members = members.filter(section=section)
    if search:
        members = members.filter(Q(user__username__icontains=search) | Q(user__first_name__icontains=search)
                                 | Q(user__last_name__icontains=search) | Q(user__email__icontains=search))
    members = members.order_by("user__username")
    assignments = _assignments(course)
    filtered = bool(section or search)
    tries: dict[tuple[int, int], list[Try]] = defaultdict(list)
    for value in _submission_values(course, [m.user_id for m in members] if filtered else None):
        tries[(value[1], value[2])].append(value)
    flagged = _flagged_submissions(course)
    extensions = {(e.student_id, e.assignment_id): e.due_at or e.closes_at
                  for e in Extension.objects.filter(assignment__course=course)}
    rows = [_row(member, assignments, tries, flagged, extensions) for member in members]
    return Gradebook(course=course, assignments=assignments,
                     max_scores=[float(a.points or 0.0) for a in assignments], rows=rows)


def _flagged_submissions(course: Course) -> dict[str, set[int]]:
    from courseops.models import ResultRevision

    overridden = ScoreOverride.objects.filter(submission__assignment__course=course).values_list("submission_id",
                                                                                               flat=True)
    regraded = ResultRevision.objects.filter(submission__assignment__course=course,
                                             reason=ResultRevision.Reason.REGRADE).values_list("submission_id",
                                                                                               flat=True)
    return {"overridden": set(overridden), "regraded": set(regraded)}


def _row(member: Membership, assignments: Sequence[Assignment], tries: dict[tuple[int, int], list[Try]],
         flagged: dict[str, set[int]], extensions: dict[tuple[int, int], datetime | None]) -> Row:
    user = member.user
    person = getattr(user, "lms_person", None)
    row = Row(user_id=user.pk, username=user.get_username(), name=user.get_full_name(), email=user.email,
              section=member.section, first_name=user.first_name, last_name=user.last_name,
              sis_id=person.sis_id if person else "",
              from_lms=person is not None and user.username.startswith(LMS_USERNAME_PREFIX))
    for assignment in assignments:
        mine = tries.get((user.pk, assignment.pk), [])
        counted = _counted(mine, assignment.counts)
        cell = Cell(attempts=len(mine), extended=(user.pk, assignment.pk) in extensions,
                    extension=extensions.get((user.pk, assignment.pk)))
        if counted is not None:
            cell.score, cell.submission_id, cell.late = counted[5], counted[0], counted[4]
            cell.overridden = counted[0] in flagged["overridden"]
            cell.regraded = counted[0] in flagged["regraded"]
        row.cells.append(cell)
    return row


def gradebook_csv(gradebook: Gradebook) -> str:
    """One row per student, starting with the username; then each assignment's counted score."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["username", "name", "email", "section", *[a.slug for a in gradebook.assignments], "total"])
    for row in gradebook.rows:
        writer.writerow([_safe(row.username), _safe(row.name), _safe(row.email), _safe(row.section), *_scores(row),
                         f"{row.total:g}"])
    return out.getvalue()


def _column_titles(gradebook: Gradebook) -> list[str]:
    """Each assignment's title, with its slug where two share a title (an LMS matches columns by name)."""
    titles = [a.title or a.slug for a in gradebook.assignments]
    return [_safe(f"{title} ({a.slug})" if titles.count(title) > 1 else title)
            for title, a in zip(titles, gradebook.assignments, strict=True)]


def _scores(row: Row) -> list[str]:
    return ["" if cell.score is None else f"{cell.score:g}" for cell in row.cells]


CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")  # Canvas's gradebook import


def gradebook_canvas_csv(gradebook: Gradebook) -> str:
    """Canvas's gradebook import: its five identity columns, one column per assignment, and the
    "Points Possible" row right after the header. Canvas matches students by SIS User ID (the LMS's
    person id) or SIS Login ID; its own numeric ID is unknown here and left empty. No total column: Canvas
    would take it for an assignment."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([*CANVAS_COLUMNS, *_column_titles(gradebook)])
    writer.writerow(["Points Possible", "", "", "", "", *[f"{m:g}" for m in gradebook.max_scores]])
    for row in gradebook.rows:
        writer.writerow([_safe(row.sortable_name), "", _safe(row.sis_id), _safe(row.login_id), _safe(row.section),
                         *_scores(row)])
    return out.getvalue()


MOODLE_COLUMNS = ("Email address", "ID number", "Username", "First name", "Last name")


def gradebook_moodle_csv(gradebook: Gradebook) -> str:
    """For Moodle's grade import (Grades → Import → CSV file): identifier columns to map from — email
    address, ID number (the LMS's person id), user name — then one column per grade item."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([*MOODLE_COLUMNS, *_column_titles(gradebook)])
    for row in gradebook.rows:
        writer.writerow([_safe(row.email), _safe(row.sis_id), _safe(row.login_id), _safe(row.first_name),
                         _safe(row.last_name), *_scores(row)])
    return out.getvalue()


EXPORTS = {"csv": gradebook_csv, "canvas": gradebook_canvas_csv, "moodle": gradebook_moodle_csv}


def _safe(text: str) -> str:
    """Spreadsheets run cells starting with = + - @ as formulas: quote them (CSV injection)."""
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def gradebook_json(gradebook: Gradebook) -> dict[str, Any]:
    return {
        "course": gradebook.course.slug,
        "assignments": [{"slug": a.slug, "title": a.title, "max_score": m, "due_at": a.due_at}
                        for a, m in zip(gradebook.assignments, gradebook.max_scores, strict=True)],
        "students": [{"username": row.username, "name": row.name, "section": row.section, "sis_id": row.sis_id,
                      "total": row.total,
                      "scores": {a.slug: {"score": c.score, "attempts": c.attempts, "late": c.late,
                                          "overridden": c.overridden, "regraded": c.regraded,
                                          "submission": c.submission_id,
                                          "extended": c.extended, "extension": c.extension}
                                 for a, c in zip(gradebook.assignments, row.cells, strict=True)}}
                     for row in gradebook.rows],
    }
