"""Prometheus metrics shared by every process: counters live in Redis (the broker), so the
web server's `/metrics` sees what the workers counted. Counting never fails a request or a
task: a Redis error only loses that increment."""

from __future__ import annotations

import logging
from typing import Any

from infra.redis_client import redis_client

log = logging.getLogger(__name__)
BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def _prefix() -> str:
    from config.celery_app import app

    return f"metrics:{app.conf.task_default_queue}"


def latency_commands(pipe: Any, *, lane: str, seconds: list[float]) -> Any:
    """Adds to a Redis pipeline the counting of submissions' submit → graded times in their lane."""
    key = f"{_prefix()}:latency:{lane}"
    buckets: dict[str, int] = {}
    for value in seconds:
        bucket = next((f"in:{bound}" for bound in BUCKETS if value <= bound), "in:inf")  # summed when read
        buckets[bucket] = buckets.get(bucket, 0) + 1
    for bucket, count in buckets.items():
        pipe.hincrby(key, bucket, count)
    return pipe.hincrby(key, "count", len(seconds)).hincrbyfloat(key, "sum", sum(seconds))


def counter_increment(*, name: str, label: str) -> None:
    try:
        redis_client().hincrby(f"{_prefix()}:{name}", label, 1)
    except Exception:
        log.warning("metrics: could not count %s", name, exc_info=True)


def throttled_count(*, reason: str) -> None:
    counter_increment(name="throttled", label=reason)


def metrics_text() -> str:
    """The Prometheus text exposition of every metric."""
    from grader.models import Submission
    from infra.lanes import CODE, LANES, NUMERIC, queue_name

    lines: list[str] = []
    client = redis_client()
    lines += ["# HELP grader_queue_depth Messages waiting on each Celery queue (numeric: drains, each of which "
              "grades every queued numeric submission).", "# TYPE grader_queue_depth gauge"]
    for lane in LANES:
        queue = queue_name(lane=lane)
        lines.append(f'grader_queue_depth{{queue="{queue}",lane="{lane}"}} {client.llen(queue)}')
    queued = Submission.objects.filter(status=Submission.Status.QUEUED, enqueued_at__isnull=False)
    lines += ["# HELP grader_queued_submissions Submissions waiting for a worker, per lane (held code ones aside).",
              "# TYPE grader_queued_submissions gauge"]
    for lane in (NUMERIC, CODE):
        lines.append(f'grader_queued_submissions{{lane="{lane}"}} {queued.filter(lane=lane).count()}')
    held = Submission.objects.filter(lane=CODE, status=Submission.Status.QUEUED, enqueued_at__isnull=True).count()
    lines += ["# HELP grader_held_submissions Code submissions waiting in the database for a free slot.",
              "# TYPE grader_held_submissions gauge", f"grader_held_submissions {held}"]
    lines += ["# HELP grader_latency_seconds Submit to graded, per lane.", "# TYPE grader_latency_seconds histogram"]
    for lane in (NUMERIC, CODE):
        data = {k.decode(): v.decode() for k, v in client.hgetall(f"{_prefix()}:latency:{lane}").items()}
        cumulative = 0
        for bound in BUCKETS:
            cumulative += int(data.get(f"in:{bound}", 0))
            lines.append(f'grader_latency_seconds_bucket{{lane="{lane}",le="{bound}"}} {cumulative}')
        lines.append(f'grader_latency_seconds_bucket{{lane="{lane}",le="+Inf"}} {data.get("count", 0)}')
        lines.append(f'grader_latency_seconds_sum{{lane="{lane}"}} {data.get("sum", 0)}')
        lines.append(f'grader_latency_seconds_count{{lane="{lane}"}} {data.get("count", 0)}')
    for name, label, help_text in (
        ("sandbox_outcomes", "outcome", "Code parts graded, by the diagnosis kind the sandbox run led to."),
        ("throttled", "reason", "Refused or delayed work: rate (429), held (code waits), budget (sandbox time)."),
    ):
        lines += [f"# HELP grader_{name}_total {help_text}", f"# TYPE grader_{name}_total counter"]
        for key, value in sorted(client.hgetall(f"{_prefix()}:{name}").items()):
            lines.append(f'grader_{name}_total{{{label}="{key.decode()}"}} {value.decode()}')
    return "\n".join(lines) + "\n"
