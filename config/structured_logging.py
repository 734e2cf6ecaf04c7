"""One JSON object per log line, carrying the submission id through web, worker and sandbox client.

`submission_context(id)` binds the id for everything logged inside it (the Celery task binds
it around grading, so the sandbox client's and the grading code's lines carry it too); a
record's own `extra={"submission_id": …}` wins.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

_submission: contextvars.ContextVar[int | None] = contextvars.ContextVar("submission_id", default=None)
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


@contextmanager
def submission_context(submission_id: int) -> Iterator[None]:
    token = _submission.set(submission_id)
    try:
        yield
    finally:
        _submission.reset(token)


class SubmissionFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "submission_id", None) is None:
            record.submission_id = _submission.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD and v is not None})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)
