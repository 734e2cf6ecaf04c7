"""A course with known submissions, graded by the real engine, for exact analytics, gradebook and
regrade expectations. Each answer is a mistake with a known diagnosis at x = 2, y = 3 (z = xy + x²):

x.grad: 7 right; 4 leaves out x → mul → add → z (missing_path); 3 leaves out x → pow → add → z;
12 multiplies the two paths (product_of_paths, names both); 7.001 is off by 1.4e-4 relative (wrong
at rel_tol 1e-4, right at 1e-3). y.grad: 2 right; 10 is z's forward value, not a gradient
(forward_value; y's own value 3 would also be d(x·y)/dy taken as y, a wrong local derivative);
-2 flips y → mul → add → z (sign_error).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from assignments.models import Assignment, Course, Membership, Part
from grader.models import Submission
from grader.workflow import submission_create, submission_grade

REFERENCE = """
x = torch.tensor(x0, requires_grad=True)
y = torch.tensor(y0, requires_grad=True)
a = x * y
b = x**2
z = a + b
z.backward()
"""

# (student, assignment "a" or "b", answers) in the order they are submitted
HISTORY: list[tuple[str, str, dict[str, str]]] = [
    ("alice", "a", {"x.grad": "4", "y.grad": "2"}),
    ("alice", "a", {"x.grad": "7", "y.grad": "2"}),
    ("bob", "a", {"x.grad": "4"}),
    ("bob", "a", {"x.grad": "4"}),
    ("bob", "a", {"x.grad": "12"}),
    ("carol", "a", {"x.grad": "3", "y.grad": "10"}),
    ("dave", "a", {"x.grad": "7", "y.grad": "-2"}),
    ("erin", "a", {"x.grad": "7.001"}),
    ("alice", "b", {"x.grad": "7", "y.grad": "2"}),
    ("alice", "b", {"x.grad": "4", "y.grad": "2"}),  # after b's due date: late, half credit
]


@dataclass
class KnownCourse:
    course: Course
    a: Assignment
    b: Assignment
    users: dict[str, Any]
    submissions: dict[tuple[str, str, int], Submission] = field(default_factory=dict)  # (who, a/b, attempt)


def _assignment(course: Course, tag: str, counts: str, title: str) -> Assignment:
    assignment = Assignment.objects.create(
        course=course, slug=f"known-{tag}-{uuid.uuid4().hex[:8]}", title=title, statement="z = xy + x²",
        params={"x0": 2.0, "y0": 3.0}, reference_program=REFERENCE, counts=counts)
    Part.objects.create(assignment=assignment, key="x.grad", order=0, points=1)
    Part.objects.create(assignment=assignment, key="y.grad", order=1, points=1)
    return assignment


def known_course_build() -> KnownCourse:
    """Creates the course, its two assignments and users, and grades HISTORY in-process."""
    tag = uuid.uuid4().hex[:6]
    course = Course.objects.create(slug=f"known-{tag}", title=f"Known course {tag}")
    # b's title sorts first: the gradebook's columns go by title
    known = KnownCourse(course=course, a=_assignment(course, f"a{tag}", Assignment.Counts.BEST, "Known, second"),
                        b=_assignment(course, f"b{tag}", Assignment.Counts.LAST, "Known, first"), users={})
    known.b.late_penalty = [[0, 0.5]]
    known.b.save()
    for name, section in [("alice", "A"), ("bob", "A"), ("carol", "B"), ("dave", "B"), ("erin", "")]:
        user = get_user_model().objects.create(username=f"{name}-{tag}", email=f"{name}@example.org",
                                               first_name=name.title())
        Membership.objects.create(user=user, course=course, section=section)
        known.users[name] = user
    for index, (name, which, answers) in enumerate(HISTORY):
        assignment = known.a if which == "a" else known.b
        if index == len(HISTORY) - 1:
            Assignment.objects.filter(id=known.b.id).update(due_at=timezone.now())
            assignment.refresh_from_db()
        submission = submission_create(student=known.users[name], assignment=assignment, answers=answers, code={})
        submission_grade(submission_id=submission.id)  # with committed writes a worker may get there first
        known.submissions[(name, which, submission.attempt or 0)] = _graded(submission.id)
    known.b.refresh_from_db()
    return known


def _graded(submission_id: int, timeout: float = 30.0) -> Submission:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        submission = Submission.objects.get(id=submission_id)
        if submission.status == Submission.Status.GRADED:
            return submission
        time.sleep(0.05)
    raise AssertionError(f"submission {submission_id} was not graded within {timeout} s")


def clone_assignment(*, slug: str, course: Course) -> Assignment:
    """A copy of a catalog assignment in `course` (the shared catalog rows stay untouched)."""
    source = Assignment.objects.get(slug=slug)
    parts = list(source.parts.all())
    source.pk, source.id = None, None
    source.slug, source.course = f"{slug}-{uuid.uuid4().hex[:8]}", course
    source.save()
    for part in parts:
        part.pk, part.id, part.assignment = None, None, source
        part.save()
    return source


def graded_now(*, student: Any, assignment: Assignment, answers: dict[str, str], code: dict[str, str]) -> Submission:
    submission = submission_create(student=student, assignment=assignment, answers=answers, code=code)
    submission_grade(submission_id=submission.id)
    return _graded(submission.id)
