"""Course operations at course scale, each figure beside a baseline measured in the same run.

1. The gradebook page of 300 students × 20 assignments (≈ 3 attempts each), p50 over repeated
   requests through Django's full stack (middleware, access checks, template), beside the bare
   query that fetches the same rows (memberships, assignments, counted submissions) alone.
2. The regrade preview of 10,000 numeric submissions after a change of points and tolerance,
   beside grading the same 10,000 fresh with the worker's service (`submission_grade`) in-process.

Reference programs run in a subprocess (no sandbox needed); each variant is analysed once.

    .venv/bin/python bench/gradebook_bench.py            # 300 × 20 gradebook, 10,000 regraded
    .venv/bin/python bench/gradebook_bench.py --quick    # 2,000 regraded
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = "x = torch.tensor(x0, requires_grad=True)\ny = torch.tensor(y0, requires_grad=True)\nz = x * y + x**2\n" \
            "z.backward()\n"
ANSWERS = ["7", "4", "3", "12", "7.001", "-1"]  # right, the two missing paths, product, near miss, sign


def setup(workdir: Path) -> None:
    os.environ.update({"DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}", "GRADER_RATE_LIMIT": "0",
                       "DJANGO_SETTINGS_MODULE": "config.settings",
                       "GRADER_REFERENCE_RUNNER": "grading.reference.SubprocessRunner"})
    os.environ.setdefault("SECRET_KEY", "bench-only-" + os.urandom(16).hex())  # nothing starts without one
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def p50_ms(run: Callable[[], Any], repeat: int) -> float:
    run()  # warm caches, templates, the connection
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def course_build(students: int, assignments: int) -> tuple[Any, Any]:
    """Rows written in bulk: the gradebook reads stored results, it never grades."""
    from django.contrib.auth import get_user_model

    from assignments.models import Assignment, Course, Membership, Part
    from grader.models import Result, Submission

    rng = random.Random(12)
    course = Course.objects.create(slug="big", title="300 students")
    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"s{n:03d}", email=f"s{n}@example.org") for n in range(students)])
    teacher = get_user_model().objects.create(username="teacher")
    Membership.objects.bulk_create([Membership(user=u, course=course, section=f"T{n % 6}") for n, u in enumerate(users)]
                                   + [Membership(user=teacher, course=course, role="instructor")])
    made = Assignment.objects.bulk_create([Assignment(course=course, slug=f"a{n:02d}", title=f"A {n}", statement="s",
                                                      reference_program=REFERENCE) for n in range(assignments)])
    Part.objects.bulk_create([Part(assignment=a, key=key, order=order) for a in made
                              for order, key in enumerate(["x.grad", "y.grad"])])
    rows = [Submission(student=u, assignment=a, status="graded", attempt=t + 1, answers={"x.grad": "7"})
            for u in users for a in made for t in range(rng.choice([0, 1, 2, 3, 3]))]
    rows = Submission.objects.bulk_create(rows, batch_size=2000)
    Result.objects.bulk_create([Result(submission=s, score=rng.choice([0.0, 1.0, 2.0]), max_score=2.0,
                                       document={"parts": []}) for s in rows], batch_size=2000)
    return course, teacher


def gradebook_figures(students: int, assignments: int, repeat: int) -> tuple[float, float, int]:
    from django.test import Client

    from assignments.models import Assignment, Membership
    from grader.models import Submission

    course, teacher = course_build(students, assignments)
    client = Client()
    client.force_login(teacher)
    url = f"/staff/courses/{course.slug}/gradebook/"

    def page() -> None:
        response = client.get(url)
        assert response.status_code == 200 and response.content.count(b"<tr>") >= students

    def bare() -> None:
        list(Membership.objects.filter(course=course, role="student").select_related("user"))
        list(Assignment.objects.filter(course=course))
        list(Submission.objects.filter(assignment__course=course, attempt__isnull=False).values(
            "id", "student_id", "assignment_id", "status", "created_at", "result__score"))

    cells = Submission.objects.filter(assignment__course=course).count()
    return p50_ms(page, repeat), p50_ms(bare, repeat), cells


def regrade_figures(count: int) -> tuple[float, float, int, int]:
    """Seconds to grade `count` numeric submissions fresh, then to preview their regrade."""
    from django.contrib.auth import get_user_model

    from assignments.models import Assignment, Course, Membership, Part
    from courseops.models import Regrade
    from courseops.regrades import regrade_preview_compute
    from grader.models import Submission
    from grader.workflow import submission_grade
    from grading.variants import variant_get

    course = Course.objects.create(slug="regrade", title="Regrade")
    assignment = Assignment.objects.create(course=course, slug="walkthrough", title="W", statement="s",
                                           params={"x0": 2.0, "y0": 3.0}, reference_program=REFERENCE)
    Part.objects.create(assignment=assignment, key="x.grad", order=0)
    Part.objects.create(assignment=assignment, key="y.grad", order=1)
    variant = variant_get(assignment=assignment, params=assignment.params)  # one reference run
    users = get_user_model().objects.bulk_create([get_user_model()(username=f"r{n}") for n in range(300)])
    Membership.objects.bulk_create([Membership(user=u, course=course) for u in users])
    rows = Submission.objects.bulk_create(
        [Submission(student=users[n % 300], assignment=assignment, variant=variant, attempt=n // 300 + 1,
                    answers={"x.grad": ANSWERS[n % len(ANSWERS)], "y.grad": "2" if n % 3 else "3"})
         for n in range(count)], batch_size=2000)
    started = time.perf_counter()
    for row in rows:
        submission_grade(submission_id=row.id)
    fresh = time.perf_counter() - started
    assignment.parts.filter(key="x.grad").update(rel_tol=1e-3)  # 7.001 becomes right
    assignment.parts.filter(key="y.grad").update(points=2)
    regrade = Regrade.objects.create(assignment=assignment)
    started = time.perf_counter()
    regrade_preview_compute(regrade_id=regrade.id)
    preview = time.perf_counter() - started
    regrade.refresh_from_db()
    assert regrade.status == "previewed" and regrade.checked == count, (regrade.status, regrade.error)
    return fresh, preview, regrade.checked, sum(1 for c in regrade.changes if c["score_changed"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--assignments", type=int, default=20)
    parser.add_argument("--submissions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="2,000 regraded submissions, 7 requests")
    args = parser.parse_args()
    if args.quick:
        args.submissions, args.repeat = 2000, 7
    with tempfile.TemporaryDirectory(prefix="gradebook-bench-") as tmp:
        setup(Path(tmp))
        page, bare, cells = gradebook_figures(args.students, args.assignments, args.repeat)
        print(f"gradebook {args.students} students × {args.assignments} assignments ({cells} submissions): "
              f"page p50 {page:.0f} ms   bare query p50 {bare:.0f} ms   ratio {page / bare:.1f}×   (target ≤ 300 ms)")
        fresh, preview, checked, changed = regrade_figures(args.submissions)
        print(f"regrade preview of {checked} numeric submissions: {preview:.1f} s ({changed} scores change)   "
              f"grading them fresh: {fresh:.1f} s   ratio {preview / fresh:.2f}×   (target ≤ 30 s)")


if __name__ == "__main__":
    main()
