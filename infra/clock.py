"""The one clock of the application: every module asks `clock.now()`, so a test can move time for all of
them at once (`monkeypatch.setattr("infra.clock.now", …)`). Model field defaults keep Django's own
`timezone.now`, which migrations name."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone


def now() -> datetime:
    """The current time, aware, in UTC."""
    return timezone.now()
