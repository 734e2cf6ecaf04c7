"""How much of the code one submission's trip visits: the files and functions of the project that run
for a numeric answer and for a program answer, from the POST to the graded GET, in the web request
and in the worker's task. A measure of how far a reader must follow a submission (docs/architecture.md).

It starts a private sandbox and a fresh SQLite database, sends each answer once untraced (so the
variant's reference analysis is cached, as it is for every student after the first), then traces the
second: `sys.setprofile` records every call into a project module (tests, benches and the venv aside).
The worker's part runs in-process, calling the lane's Celery task as the worker would.

    .venv/bin/python bench/journey.py          # prints, per journey: files, functions, entries per file
    .venv/bin/python bench/journey.py --files  # and the files themselves
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SKIPPED = (ROOT / ".venv", ROOT / "tests", ROOT / "bench")
NUMERIC = ("visual-walkthrough", {"answers": {"x.grad": "4", "y.grad": "2"}})
PROGRAM = ("visual-walkthrough", {"code": {"grad_z": "def grad_z(x, y):\n    return 2*x, x\n"}})


@dataclass
class Trace:
    """The project code one stretch of execution called: functions, and entries into each file from another."""

    functions: set[tuple[str, str, int]] = field(default_factory=set)
    entries: Counter[str] = field(default_factory=Counter)

    def files(self) -> set[str]:
        return {path for path, _, _ in self.functions}

    def add(self, other: Trace) -> Trace:
        return Trace(self.functions | other.functions, self.entries + other.entries)


def _ours(filename: str) -> str | None:
    path = Path(filename)
    if not path.is_absolute() or ROOT not in path.parents or any(skip in path.parents for skip in SKIPPED):
        return None
    return str(path.relative_to(ROOT))


@contextmanager
def traced() -> Iterator[Trace]:
    trace = Trace()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        mine = _ours(frame.f_code.co_filename)
        if mine is None:
            return
        trace.functions.add((mine, frame.f_code.co_name, frame.f_code.co_firstlineno))
        caller = frame.f_back
        if caller is None or _ours(caller.f_code.co_filename) != mine:
            trace.entries[mine] += 1

    sys.setprofile(profile)
    try:
        yield trace
    finally:
        sys.setprofile(None)


def _setup(workdir: Path) -> None:
    os.environ.update({"DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "0", "SECRET_KEY": uuid.uuid4().hex,
                       "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}",
                       "SANDBOX_SOCKET": str(workdir / "sandbox.sock"),
                       "CELERY_QUEUE": f"journey-{uuid.uuid4().hex[:8]}",  # nobody consumes it; emptied at the end
                       "GRADER_RATE_LIMIT": "0"})
    import django

    django.setup()


def _journey(client: Any, headers: dict[str, str], slug: str, body: dict[str, Any],
             work: Callable[[int], None]) -> tuple[Trace, Trace, str]:
    """(web, worker, status) of one submission: the POST and the graded GET; the lane's task."""
    with traced() as web:
        reply = client.post(f"/api/v1/assignments/{slug}/submissions/", data=json.dumps(body),
                            content_type="application/json", **headers)
    submission_id = reply.json()["id"]
    with traced() as worker:
        work(submission_id)
    with traced() as read:
        status = client.get(f"/api/v1/submissions/{submission_id}/", **headers).json()["status"]
    return web.add(read), worker, status


def _report(name: str, web: Trace, worker: Trace, status: str) -> None:
    both = web.add(worker)
    print(f"{name} ({status}): {len(both.files())} files, {len(both.functions)} functions "
          f"(web {len(web.files())} files / {len(web.functions)} functions, "
          f"worker {len(worker.files())} / {len(worker.functions)})")
    for label, trace in (("web", web), ("worker", worker)):
        busiest = ", ".join(f"{path} ×{count}" for path, count in trace.entries.most_common(4))
        print(f"  most entered in the {label}: {busiest}")
        if "--files" in sys.argv:
            listed = " ".join(f"{path}×{trace.entries[path]}" for path in sorted(trace.files()))
            print(f"  {label} files (×entries): {listed}")


def main() -> None:
    from numeric_bench import reference_sandbox  # the bench's private sandbox, on a free uid range

    with tempfile.TemporaryDirectory(prefix="journey-", dir=ROOT / "run" if (ROOT / "run").is_dir() else None) as tmp:
        _setup(Path(tmp))
        from django.core.management import call_command
        from django.test import Client

        call_command("migrate", verbosity=0)
        with reference_sandbox():
            import io

            call_command("load_assignments", verbosity=0, stdout=io.StringIO())
            from assignments.services import course_demo
            from config.celery_app import app
            from grader.accounts import user_create
            from grader.tasks import grade_numeric, grade_submission
            from grader.tokens import token_create

            student = user_create(username="journey", role="student", course=course_demo())[0]
            headers = {"HTTP_AUTHORIZATION": f"Token {token_create(user=student)}"}
            client = Client()
            lanes = {"numeric": lambda submission_id: grade_numeric(),
                     "program": lambda submission_id: grade_submission(submission_id)}
            try:
                for name, (slug, body) in (("numeric answer", NUMERIC), ("program answer", PROGRAM)):
                    work = lanes["numeric" if "answers" in body else "program"]
                    _journey(client, headers, slug, body, work)  # the variant's analysis computed and cached
                    _report(name, *_journey(client, headers, slug, body, work))
            finally:
                with app.connection_for_write() as connection:
                    queue = app.conf.task_default_queue
                    for each in (queue, f"{queue}-code", f"{queue}-maintenance", f"{queue}-lms"):
                        connection.default_channel.client.delete(each)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "bench"))
    main()
