"""The sandbox server's log: one JSON object per line (the web and the workers use the same
formatter). A job's request may carry log fields (the grader sends `submission_id`): every
line about that job has them, so a submission can be followed from web to worker to sandbox."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import IO

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """`time`, `level`, `logger`, `message`, then every field the record was given (`extra=`)."""

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


class _ProcessId(logging.Filter):
    """Zygotes, proxies and inits all log: say which one."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.pid = record.process
        return True


def configure(stream: IO[str]) -> None:
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(_ProcessId())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
