"""The benchmarks' floor (bench/numeric_bench.py): the same broker hop and one database write as a
graded submission, without grading. Touches only rows a bench created for it."""

from __future__ import annotations

from grader.models import Submission
from infra import clock

BENCH_NOOP = "bench no-op round trip"  # the error_reason that marks a bench's own rows


def bench_noop_finish(*, submission_id: int) -> None:
    Submission.objects.filter(id=submission_id, status=Submission.Status.ERROR, error_reason=BENCH_NOOP).update(
        graded_at=clock.now())
