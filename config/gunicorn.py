"""gunicorn settings shared by `make run`, docker-compose and the benchmarks' stacks.

Threads, because a request may wait for grading (`?wait=`, grader/finished.py) without using the
CPU: each process keeps two threads for everything else, whatever the waiters do. Each thread may
also keep a database connection open (CONN_MAX_AGE 60 s): a PostgreSQL server needs
`max_connections` ≥ web processes × threads + worker processes, or a pooler in between.
"""

import os
from typing import Any

worker_class = "gthread"
workers = int(os.environ.get("WEB_WORKERS", "2"))
threads = int(os.environ.get("WEB_THREADS", "8"))
keepalive = 5


def post_fork(server: Any, worker: Any) -> None:
    """Before the worker loads Django: waiting slots from the threads it really has (a `--threads`
    on the command line wins over this file), never more than all but two of them."""
    free = max(server.cfg.threads - 2, 0)
    asked = os.environ.get("GRADER_WAIT_SLOTS")
    os.environ["GRADER_WAIT_SLOTS"] = str(min(int(asked), free) if asked and asked.isdigit() else free)
