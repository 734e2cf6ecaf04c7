"""Everyone's submissions to one assignment, for staff, filtered by student, part, correctness,
diagnosis kind, status and infrastructure errors.

Part-level filters read the result documents (JSON queries differ between SQLite and
PostgreSQL), so they scan the assignment's submissions newest first and stop at one page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from assignments.access import by_course_staff
from assignments.models import Assignment
from courseops.misconceptions import UNNAMED
from courseops.query_numbers import query_int
from grader.models import Submission

PAGE = 100
MAX_PAGE = 100_000


def page_from(query: Any) -> int:
    """`?page=N` of a page or API request, from 1 (bounded: a page past the last is empty)."""
    return query_int(query, "page", default=1, low=1, high=MAX_PAGE)


BOOLEAN = {"true": True, "1": True, "false": False, "0": False}  # a filter's yes/no, as the query spells it


@dataclass(frozen=True)
class SubmissionFilter:
    student: str = ""
    part: str = ""
    correct: bool | None = None
    kind: str = ""
    status: str = ""
    infra: bool = False  # only infrastructure errors (grading failed on our side)
    path: str = ""  # "x→mul→add→z": wrong answers whose diagnosis names this path

    @classmethod
    def from_query(cls, query: Any) -> SubmissionFilter:
        correct = BOOLEAN.get(str(query.get("correct", "")).lower())
        return cls(student=query.get("student", "")[:150], part=query.get("part", "")[:64],
                   correct=correct, kind=query.get("kind", "")[:40], status=query.get("status", "")[:10],
                   infra=BOOLEAN.get(str(query.get("infra", "")).lower()) is True, path=query.get("path", "")[:400])

    @staticmethod
    def query_problem(query: Any) -> str | None:
        """What is wrong with a filter value the list would otherwise ignore (the API says so: a 400)."""
        choices = {"correct": tuple(BOOLEAN), "infra": tuple(BOOLEAN), "status": tuple(Submission.Status.values)}
        for name, allowed in choices.items():
            value = str(query.get(name, ""))
            if name in ("correct", "infra"):
                value = value.lower()  # as from_query reads them: TRUE is true
            if value and value not in allowed:  # "GRADED" would be ignored by the list
                return f"{name} must be one of {', '.join(allowed)}"
        return None

    @property
    def reads_documents(self) -> bool:
        return bool(self.part or self.kind or self.path or self.correct is not None)


def _base(assignment: Assignment, wanted: SubmissionFilter) -> QuerySet[Submission]:
    rows = Submission.objects.filter(~by_course_staff(), assignment=assignment).select_related(  # students' only
        "student", "result").order_by(
        "-created_at", "-id")
    if wanted.student:
        rows = rows.filter(student__username=wanted.student)
    if wanted.infra:
        rows = rows.filter(status=Submission.Status.ERROR)
    elif wanted.status in Submission.Status.values:
        rows = rows.filter(status=wanted.status)
    if wanted.reads_documents:
        rows = rows.filter(status=Submission.Status.GRADED, result__isnull=False)
    return rows


def _path_key(path: list[str]) -> str:
    return "→".join(path)


def part_matches(document: dict[str, Any], wanted: SubmissionFilter) -> bool:
    """Whether some part of the document (the one asked for, if any) passes every part filter."""
    for part in document.get("parts", []):
        diagnosis = part.get("diagnosis", {})
        if wanted.part and part.get("part") != wanted.part:
            continue
        if wanted.correct is not None and bool(part.get("correct")) != wanted.correct:
            continue
        if (wanted.kind or wanted.path) and diagnosis.get("kind") == "unanswered":
            continue
        if wanted.kind and diagnosis.get("kind") != wanted.kind:
            continue
        if wanted.path and (diagnosis.get("kind") in UNNAMED  # as the analytics count paths
                            or wanted.path.replace(" ", "") not in {_path_key(p) for p in diagnosis.get("paths", [])}):
            continue
        return True
    return False


def submissions_for_staff(*, assignment: Assignment, wanted: SubmissionFilter, offset: int = 0,
                          limit: int = PAGE) -> list[Submission]:
    """One page of the assignment's submissions that pass the filter, newest first."""
    rows = _base(assignment, wanted)
    if not wanted.reads_documents:
        return list(rows[offset:offset + limit])
    found: list[Submission] = []
    skipped = 0
    for submission in rows.iterator(chunk_size=500):
        if not part_matches(submission.result.document, wanted):
            continue
        if skipped < offset:
            skipped += 1
            continue
        found.append(submission)
        if len(found) >= limit:
            break
    return found
