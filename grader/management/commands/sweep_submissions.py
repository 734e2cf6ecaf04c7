"""python manage.py sweep_submissions — re-enqueue submissions stuck in queued/running.

Celery beat runs the same service every GRADER_SWEEP_EVERY seconds; this command is
for operators and for drills after a broker restart.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from grader.workflow import submissions_sweep, sweep_defaults


class Command(BaseCommand):
    help = "Re-enqueue submissions whose broker message was lost or whose worker died."

    def add_arguments(self, parser: CommandParser) -> None:
        defaults = sweep_defaults()
        parser.add_argument("--queued-after", type=float, default=defaults["queued_after"].total_seconds())
        parser.add_argument("--running-after", type=float, default=defaults["running_after"].total_seconds())

    def handle(self, *args: Any, **options: Any) -> None:
        ids = submissions_sweep(
            queued_after=timedelta(seconds=options["queued_after"]),
            running_after=timedelta(seconds=options["running_after"]),
        )
        self.stdout.write(f"re-enqueued {len(ids)} submission(s)")
