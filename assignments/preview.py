"""Live preview of an assignment: what the reference computes, what each typical mistake would
answer and say, and a trial answer graded exactly as a student's would be.

Call inside `authoring.staged` (the working copy applied, rolled back afterwards).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from assignments.answer_grading import answers_grade, graded_svg
from assignments.answer_parsing import AnswerErrors, answers_parse
from assignments.models import Assignment, Part
from assignments.reference import ReferenceError
from assignments.variants import variant_analysis, variant_get
from chainrule import Analysis, diagnose_numeric, graph_svg

MAX_MISTAKES = 30
LINE_RE = re.compile(r"program line (\d+)")


@dataclass(frozen=True)
class Mistake:
    answer: Any
    kind: str
    message: str


@dataclass(frozen=True)
class PartPreview:
    key: str
    kind: str
    answer: Any
    paths: list[tuple[str, Any]] = field(default_factory=list)
    mistakes: list[Mistake] = field(default_factory=list)


@dataclass(frozen=True)
class SourceLine:
    number: int
    text: str
    failing: bool


@dataclass
class Preview:
    error: str = ""
    source: list[SourceLine] = field(default_factory=list)
    parts: list[PartPreview] = field(default_factory=list)
    svg: str = ""
    notes: list[str] = field(default_factory=list)
    trial: dict[str, Any] | None = None
    trial_svg: str = ""
    trial_errors: dict[str, str] = field(default_factory=dict)


def preview_build(*, assignment: Assignment, answers: dict[str, str], code: dict[str, str]) -> Preview:
    try:
        variant = variant_get(assignment=assignment, params=assignment.params)
    except ReferenceError as exc:
        return Preview(error=str(exc), source=_source_around(assignment.reference_program, str(exc)))
    analysis = variant_analysis(variant=variant)
    preview = Preview(parts=[_part(part, analysis) for part in assignment.parts.all()],
                      svg=graph_svg(analysis=analysis), notes=list(analysis.notes))
    if answers or code:
        _trial(preview, assignment=assignment, variant=variant, answers=answers, code=code)
    return preview


def _trial(preview: Preview, *, assignment: Assignment, variant: Any, answers: dict[str, str],
           code: dict[str, str]) -> None:
    try:
        answers_parse(assignment=assignment, answers=answers, code=code)
        graded = answers_grade(assignment=assignment, variant=variant, answers=answers, code=code,
                               show_expected=False)
    except AnswerErrors as exc:
        preview.trial_errors = exc.errors
        return
    except ReferenceError as exc:
        preview.trial_errors = {"reference": str(exc)}
        return
    preview.trial = graded.document
    preview.trial_svg = graded_svg(analysis=variant_analysis(variant=variant), graded=graded)


def _part(part: Part, analysis: Analysis) -> PartPreview:
    if part.kind == Part.Kind.CHOICE:
        return PartPreview(key=part.key, kind=part.kind, answer=", ".join(part.choice.answer))
    keys = part.kind_config.keys_read(part.key)
    if part.kind == Part.Kind.CODE or keys[0] not in analysis.parts:  # code parts answer one or several gradients
        values: Any = {key: analysis.parts[key].value for key in keys if key in analysis.parts}
        return PartPreview(key=part.key, kind=part.kind, answer=values)
    reference = analysis.parts[keys[0]]
    paths = [(" → ".join(p.names), p.contribution) for p in analysis.paths.get(reference.tensor, [])]
    answer = part.symbolic.formula or reference.value if part.kind == Part.Kind.SYMBOLIC else reference.value
    return PartPreview(key=part.key, kind=part.kind, answer=answer, paths=paths,
                       mistakes=_mistakes(analysis, keys[0], part) if part.kind == Part.Kind.NUMERIC else [])


def _mistakes(analysis: Analysis, key: str, part: Part) -> list[Mistake]:
    """The feedback space: each precomputed typical mistake's answer and the message it earns."""
    found = []
    for hypothesis in analysis.hypotheses.get(key, [])[:MAX_MISTAKES]:
        if hypothesis.any_number:
            continue
        verdict = diagnose_numeric(analysis=analysis, part=key, answer=hypothesis.value, rel_tol=part.rel_tol,
                                   abs_tol=part.abs_tol)
        found.append(Mistake(answer=hypothesis.value, kind=hypothesis.kind.replace("_", " "), message=verdict.message))
    return found


def _source_around(program: str, error: str) -> list[SourceLine]:
    """The instructor's program with the failing line marked (the line numbers are theirs)."""
    match = LINE_RE.search(error)
    failing = int(match.group(1)) if match else 0
    lines = program.splitlines()
    return [SourceLine(number=n, text=text, failing=n == failing) for n, text in enumerate(lines, start=1)]
