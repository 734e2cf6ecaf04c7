"""One program analysed and one numeric answer diagnosed: the step every engine test repeats."""

from __future__ import annotations

from chainrule import Diagnosis, analyze_program, diagnose_numeric
from chainrule.values import Value


def diagnose(program: str, params: dict[str, object], part: str, answer: Value) -> Diagnosis:
    analysis = analyze_program(program=program, params=params, parts=[part])
    return diagnose_numeric(analysis=analysis, part=part, answer=answer)
