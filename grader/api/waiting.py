"""The API's bounded `wait`: poll a row a worker is filling, for at most a few seconds."""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import Any, TypeVar

from django.db.models import Model

from grader.finished import wait_slot

Row = TypeVar("Row", bound=Model)


def row_waited(row: Row, *, busy: Collection[Any], seconds: float, interval: float, holder: Any) -> Row:
    """Re-reads `row` every `interval` while its status is in `busy`, at most `seconds`
    (callers cap it at 20). It holds one of the process's waiting slots (grader/finished.py, at most
    two per `holder`, the user): without a free one it answers after one read."""
    deadline = time.monotonic() + seconds
    row.refresh_from_db()
    if seconds <= 0 or getattr(row, "status") not in busy:  # noqa: B009
        return row
    with wait_slot(holder) as waiting:
        while waiting and getattr(row, "status") in busy and time.monotonic() < deadline:  # noqa: B009
            time.sleep(interval)
            row.refresh_from_db()
    return row
