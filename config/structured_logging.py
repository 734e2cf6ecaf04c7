"""One JSON object per log line, carrying the submission id through web, worker and sandbox.

`submission_context(id)` binds the id for everything logged inside it (the Celery task binds
it around grading, so the sandbox client's and the grading code's lines carry it too); a
record's own `extra={"submission_id": …}` wins. Sandbox jobs started inside it carry it to the
sandbox server (`current_log_fields`), whose lines use the same JSON formatter (sandbox/logs.py).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from sandbox.logs import JsonFormatter

__all__ = ["JsonFormatter", "SubmissionFilter", "current_log_fields", "submission_context"]

_submission: contextvars.ContextVar[int | None] = contextvars.ContextVar("submission_id", default=None)


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


def current_log_fields() -> dict[str, int]:
    """What a sandbox job is tagged with, so the sandbox's log lines name the submission too."""
    submission_id = _submission.get()
    return {} if submission_id is None else {"submission_id": submission_id}
