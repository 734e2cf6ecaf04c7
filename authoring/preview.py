"""Live preview of an assignment: what the reference computes, what each typical mistake would
answer and say (authoring/feedback_space.py), and a trial answer graded exactly as a student's
would be.

Call inside `authoring.staged` (the working copy applied, rolled back afterwards).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from assignments.models import Assignment, Part, Variant
from authoring.feedback_space import CHOICE_NOTE, Mistake, code_note, formula_mistakes, numeric_mistakes
from chainrule import Analysis, graph_svg
from chainrule.picture.disclosure import Disclosure
from grading.answer_grading import answers_grade, graded_svg
from grading.answer_parsing import AnswerErrors, answers_parse
from grading.part_answers import part_answer, part_answer_text, part_reference_key
from grading.reference import ReferenceRunError
from grading.variants import variant_analysis, variant_get

LINE_RE = re.compile(r"program line (\d+)")


@dataclass(frozen=True)
class PartPreview:
    key: str
    kind: str
    answer: Any
    paths: list[tuple[str, Any]] = field(default_factory=list)
    mistakes: list[Mistake] = field(default_factory=list)  # the feedback space
    seed_point: str = ""  # formula parts: where the mistakes' values are shown ("x0 = 3.0, y0 = 2.5")
    note: str = ""  # what the feedback space is for a code or choice part


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
    except ReferenceRunError as exc:
        return Preview(error=str(exc), source=_source_around(assignment.reference_program, str(exc)))
    analysis = variant_analysis(variant=variant)
    preview = Preview(parts=[_part(part, analysis, variant) for part in assignment.parts.all()],
                      svg=graph_svg(analysis=analysis, disclosure=Disclosure(everything=True)),
                      notes=list(analysis.notes))
    if answers or code:
        _trial(preview, assignment=assignment, variant=variant, answers=answers, code=code)
    return preview


def _trial(preview: Preview, *, assignment: Assignment, variant: Any, answers: dict[str, str],
           code: dict[str, str]) -> None:
    try:
        answers_parse(assignment=assignment, answers=answers, code=code)
        graded = answers_grade(assignment=assignment, variant=variant, answers=answers, code=code,
                               expected_shown=False)
    except AnswerErrors as exc:
        preview.trial_errors = exc.errors
        return
    except ReferenceRunError as exc:
        preview.trial_errors = {"reference": str(exc)}
        return
    preview.trial = graded.document
    preview.trial_svg = graded_svg(analysis=variant_analysis(variant=variant), graded=graded)


def _part(part: Part, analysis: Analysis, variant: Variant) -> PartPreview:
    answer = part_answer(part, analysis)
    reference = analysis.parts.get(part_reference_key(part) or "")
    if part.kind == Part.Kind.CHOICE:
        return PartPreview(key=part.key, kind=part.kind, answer=answer, note=CHOICE_NOTE)
    if reference is None:  # code parts answer one or several gradients: shown as code
        return PartPreview(key=part.key, kind=part.kind, answer=part_answer_text(part, answer, variant.params),
                           note=code_note(part=part) if part.kind == Part.Kind.CODE else "")
    paths = [(" → ".join(p.names), p.contribution) for p in analysis.paths.get(reference.tensor, [])]
    if part.kind == Part.Kind.NUMERIC:
        return PartPreview(key=part.key, kind=part.kind, answer=answer, paths=paths,
                           mistakes=numeric_mistakes(analysis=analysis, part=part))
    seed = ", ".join(f"{name} = {variant.params.get(param)}" for name, param in part.config["variables"].items())
    return PartPreview(key=part.key, kind=part.kind, answer=answer, paths=paths, seed_point=seed,
                       mistakes=formula_mistakes(part=part, analysis=analysis, seed=variant.params))


def _source_around(program: str, error: str) -> list[SourceLine]:
    """The instructor's program with the failing line marked (the line numbers are theirs)."""
    match = LINE_RE.search(error)
    failing = int(match.group(1)) if match else 0
    lines = program.splitlines()
    return [SourceLine(number=n, text=text, failing=n == failing) for n, text in enumerate(lines, start=1)]
