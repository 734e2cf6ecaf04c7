"""gunicorn settings shared by `make run`, docker-compose and the benchmarks' stacks.

Threads, because a request may wait for grading (`?wait=`, grader/finished.py) without using the
CPU: each process keeps two threads for everything else, whatever the waiters do.
"""

import os

worker_class = "gthread"
workers = int(os.environ.get("WEB_WORKERS", "2"))
threads = int(os.environ.get("WEB_THREADS", "8"))
os.environ.setdefault("GRADER_WAIT_SLOTS", str(max(threads - 2, 0)))
keepalive = 5
