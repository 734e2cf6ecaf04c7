"""Where a wrong program departs from the exercise's: its lines that no line of the reference reads
like (spaces and comments aside). A diagnosis from the numbers alone (a sign flipped, a path left out,
a factor wrong) names an edge of the reference's graph, not a line of the student's; when the program
departs from the reference at one or two lines, those are where its mistake is. The reference is read
only to choose the student's line numbers: none of its text reaches the feedback."""

from __future__ import annotations

import re

MAX_DEPARTURES = 2  # more lines differing than this: a program written its own way, no line is singled out


def departed_lines(source: str, reference: str) -> list[int]:
    theirs = {_normal(line) for line in reference.splitlines()}
    found = [number for number, line in enumerate(source.splitlines(), 1)
             if _normal(line) and _normal(line) not in theirs]
    return found if len(found) <= MAX_DEPARTURES else []


def _normal(line: str) -> str:
    code = line.split("#", 1)[0]
    return re.sub(r"\s+", "", code)
