"""Shared by the derive scripts of tests/corpus_code: plain torch, no grader import.

A script names its assignment, lists its right and wrong programs, and gives for each wrong
program what its mistake leaves in the gradients, computed from the mistake by hand (a formula
or a small torch computation of what the student believed), never by running the program.
`verify` runs the reference and every program with the assignment's parameters and checks:
each right program leaves the reference's gradients (to 1e-6); each wrong program leaves
different ones (or raises) and exactly the ones its mistake predicts; then it writes the case
file. A wrong case's `lines` come from `at`: text that must occur on exactly one line of its
source (the line where the mistake is).
"""

from __future__ import annotations

import copy
import json
import sys
import textwrap
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

torch.set_default_dtype(torch.float32)
ROOT = Path(__file__).resolve().parents[1]
RAISES = "raises"
Grads = dict[str, Any]


def program(text: str) -> str:
    """A program written indented inside a script, as the student's file holds it."""
    return textwrap.dedent(text).strip("\n") + "\n"


@dataclass
class Case:
    part: str
    source: str
    mistake: str = ""
    kind: str = ""
    at: list[str] = field(default_factory=list)
    expect: Callable[[dict[str, Any]], Grads | str] | None = None
    accept: list[str] = field(default_factory=list)
    edge: list[str] | None = None
    paths: list[list[str]] | None = None

    @property
    def right(self) -> bool:
        return not self.kind

    @property
    def lines(self) -> list[int]:
        rows = self.source.splitlines()
        found = []
        for text in self.at:
            hits = [i + 1 for i, row in enumerate(rows) if text in row]
            assert len(hits) == 1, f"{text!r} must be on exactly one line of:\n{self.source}"
            found.append(hits[0])
        return sorted(set(found))


def right(part: str, source: str) -> Case:
    return Case(part, program(source))


def wrong(part: str, source: str, *, at: str | list[str], mistake: str, kind: str,
          expect: Callable[[dict[str, Any]], Grads | str], accept: list[str] | None = None,
          edge: list[str] | None = None, paths: list[list[str]] | None = None) -> Case:
    return Case(part, program(source), mistake, kind, [at] if isinstance(at, str) else at, expect,
                accept or [], edge, paths)


def assignment(slug: str) -> dict[str, Any]:
    return tomllib.loads((ROOT / "assignments" / f"{slug}.toml").read_text(encoding="utf-8"))


def reads_of(spec: dict[str, Any], part: str) -> list[str]:
    return next(p["config"]["reads"] for p in spec["parts"] if p["key"] == part)


def run(source: str, params: dict[str, Any], reads: list[str]) -> Grads | BaseException:
    """The program's gradients after it ran (None where a .grad is None), or what it raised."""
    namespace: dict[str, Any] = {"torch": torch, **copy.deepcopy(params)}
    try:
        exec(compile(source, "<program>", "exec"), namespace)  # our own corpus programs
        return {key: read(namespace, key) for key in reads}
    except Exception as exc:  # a wrong program may raise: that is its observable result
        return exc


def read(namespace: dict[str, Any], key: str) -> Any:
    name, *attrs = key.split(".")
    value = namespace[name]
    for attr in attrs:
        value = getattr(value, attr)
    return None if value is None else value.detach().clone().to(torch.float64)


def same(a: Grads, b: Grads, tol: float = 1e-6) -> bool:
    for key in a:
        x, y = a[key], b[key]
        if (x is None) != (y is None):
            return False
        if x is not None:
            y = torch.as_tensor(y, dtype=torch.float64)
            if x.shape != y.shape or not torch.allclose(x, y, rtol=tol, atol=tol):
                return False
    return True


def verify(slug: str, cases: list[Case], points: list[dict[str, Any]] | None = None) -> None:
    """Check every case at the assignment's own values (and at `points`, parameter overrides),
    print a summary, and write cases/<slug>.toml; exit 1 on any failure."""
    spec = assignment(slug)
    failures = []
    for override in [{}, *(points or [])]:
        params = {**spec["params"], **override}
        for number, case in enumerate(cases, 1):
            reads = reads_of(spec, case.part)
            reference = run(spec["reference"], params, reads)
            assert not isinstance(reference, BaseException), f"{slug}: the reference raised {reference!r}"
            got = run(case.source, params, reads)
            label = f"{slug} case {number} ({'right' if case.right else case.mistake})"
            if case.right:
                if isinstance(got, BaseException) or not same(got, reference):
                    failures.append(f"{label}: right program gives {got!r}, reference {reference!r}")
                continue
            _ = case.lines  # the `at` texts name one line each
            predicted = case.expect(params) if case.expect else None
            if predicted == RAISES:
                if not isinstance(got, BaseException):
                    failures.append(f"{label}: should raise, gives {got!r}")
            elif isinstance(got, BaseException):
                failures.append(f"{label}: raised {got!r}")
            elif same(got, reference):
                failures.append(f"{label}: leaves the reference's gradients")
            elif not isinstance(predicted, dict) or not same(got, predicted, tol=1e-5):
                failures.append(f"{label}: gives {got!r}, the mistake predicts {predicted!r}")
    write(slug, cases)
    wrongs = [c for c in cases if not c.right]
    kinds = sorted({c.kind for c in wrongs})
    print(f"{slug}: {len(cases) - len(wrongs)} right, {len(wrongs)} wrong "
          f"({', '.join(f'{k} {sum(c.kind == k for c in wrongs)}' for k in kinds)}), "
          f"checked at {1 + len(points or [])} point(s): {'OK' if not failures else 'FAILED'}")
    for failure in failures:
        print("  " + failure)
    if failures:
        sys.exit(1)


def write(slug: str, cases: list[Case]) -> None:
    out = [f"# Written by tests/corpus_code/derive/{slug.removeprefix('code-')}.py; each wrong program's",
           "# gradients are predicted there from its mistake and checked against the program."]
    for case in cases:
        assert "'''" not in case.source
        out += ["", "[[right]]" if case.right else "[[wrong]]", f"part = {json.dumps(case.part)}",
                f"source = '''\n{case.source}'''"]
        if case.right:
            continue
        out += [f"lines = {json.dumps(case.lines)}", f"mistake = {json.dumps(case.mistake)}",
                f"kind = {json.dumps(case.kind)}"]
        if case.accept:
            out.append(f"accept = {json.dumps(case.accept)}")
        if case.edge:
            out.append(f"edge = {json.dumps(case.edge)}")
        if case.paths:
            out.append(f"paths = {json.dumps(case.paths)}")
    (ROOT / "cases" / f"{slug}.toml").write_text("\n".join(out) + "\n", encoding="utf-8")
