"""The API's bounded `wait`: poll a row a worker is filling, for at most a few seconds."""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import Any, TypeVar

from django.db.models import Model

Row = TypeVar("Row", bound=Model)


def row_waited(row: Row, *, busy: Collection[Any], seconds: float, interval: float) -> Row:
    """Re-reads `row` every `interval` while its status is in `busy`, at most `seconds`
    (callers cap it at 20)."""
    deadline = time.monotonic() + seconds
    row.refresh_from_db()
    while getattr(row, "status") in busy and time.monotonic() < deadline:  # noqa: B009
        time.sleep(interval)
        row.refresh_from_db()
    return row
