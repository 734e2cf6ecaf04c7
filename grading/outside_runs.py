"""Sandbox runs kept out of database transactions, and the sandbox time a job may spend.

Authoring stages an assignment in a transaction: rolled back for a preview or vetting, committed for
an import's publish. A transaction that writes holds SQLite's one write lock (and PostgreSQL's row
locks) until it ends, so a reference program that runs for a minute inside one stops every login and
submission of the site for that minute. Inside `runs_outside`, a sandbox run that the staged work asks
for is therefore not done there: the pass is abandoned (its transaction rolls back), the run is done
with no transaction open, its answer is remembered, and the work starts again; the next pass finds the
answer. Only the last pass, which runs nothing, may commit, and it takes milliseconds.

Every sandbox call of grading goes through `sandbox_call`, keyed by its whole request (the program,
the values, the points: all deterministic, so a pass asks for the same runs as the one before it).
Outside `runs_outside` it just runs.

`sandbox_allowance` bounds the sandbox time of everything run under it (an authoring job and the
instructor's budget): once it is spent, a further run fails as the reference would, with the reason.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
MAX_PASSES = 200  # a pass per distinct run: vetting asks for a handful per sampled variant


class RunDeferred(BaseException):
    """Raised through the staged work when it needs a run not done yet. A BaseException, so that no
    `except Exception` of the work can take it for a failure of its own."""

    def __init__(self, key: str, run: Callable[[], Any]) -> None:
        super().__init__(key[:80])
        self.key, self.run = key, run


class AllowanceSpent(Exception):
    """The job's sandbox time is used up (raised by the run itself, so callers see a run that failed)."""


@dataclass
class Allowance:
    seconds: float | None  # None: no bound
    spent: float = 0.0

    def left(self) -> float | None:
        return None if self.seconds is None else self.seconds - self.spent


@dataclass
class _Deferring:
    done: dict[str, tuple[bool, Any]] = field(default_factory=dict)


_DEFERRING: ContextVar[_Deferring | None] = ContextVar("outside_runs_deferring", default=None)
_ALLOWANCE: ContextVar[Allowance | None] = ContextVar("outside_runs_allowance", default=None)


@contextmanager
def sandbox_allowance(seconds: float | None) -> Iterator[Allowance]:
    """Count (and, when `seconds` is given, bound) the sandbox time of the calls made inside."""
    allowance = Allowance(seconds=seconds)
    token = _ALLOWANCE.set(allowance)
    try:
        yield allowance
    finally:
        _ALLOWANCE.reset(token)


def sandbox_call(kind: str, request: Any, run: Callable[[], T],
                 out_of_time: Callable[[str], Exception] | None = None) -> T:
    """`run()` (one sandbox job, or a reference run), deferred inside `runs_outside`. `out_of_time`
    makes the exception raised when the allowance is spent (by default AllowanceSpent)."""
    deferring = _DEFERRING.get()
    if deferring is None:
        return _timed(run, out_of_time)
    key = f"{kind}:{json.dumps(request, sort_keys=True, default=repr)}"
    if key not in deferring.done:
        raise RunDeferred(key, lambda: _timed(run, out_of_time))
    ok, value = deferring.done[key]
    if ok:
        return copy.deepcopy(value)
    raise value


def _timed(run: Callable[[], T], out_of_time: Callable[[str], Exception] | None) -> T:
    allowance = _ALLOWANCE.get()
    if allowance is None:
        return run()
    left = allowance.left()
    if left is not None and left <= 0:
        message = (f"this job has used its sandbox time ({allowance.seconds:g} s): try again later, "
                   "or with a faster reference program")
        raise (out_of_time or AllowanceSpent)(message)
    started = time.monotonic()
    try:
        return run()
    finally:
        allowance.spent += time.monotonic() - started


def runs_outside(body: Callable[[], T]) -> T:
    """`body()` (which opens and ends its own transaction) called until a pass needs no sandbox run; each
    run a pass asks for is done between passes, with no transaction open."""
    deferring = _Deferring()
    token = _DEFERRING.set(deferring)
    try:
        for _ in range(MAX_PASSES):
            try:
                return body()
            except RunDeferred as needed:
                deferring.done[needed.key] = _outcome(needed.run)
        raise RuntimeError(f"staged work still asked for sandbox runs after {MAX_PASSES} passes")
    finally:
        _DEFERRING.reset(token)


def _outcome(run: Callable[[], Any]) -> tuple[bool, Any]:
    token = _DEFERRING.set(None)  # the run itself is never deferred
    try:
        return True, run()
    except Exception as exc:  # the work sees the same failure when it asks again
        return False, exc
    finally:
        _DEFERRING.reset(token)
