"""Live preview of an assignment: what the reference computes, what each typical mistake would
answer and say (authoring/feedback_space.py), and a trial answer graded exactly as a student's
would be.

Call inside `authoring.staged` (the working copy applied, rolled back afterwards).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from assignments.models import RELEASE_CHOICES, Assignment, Part, Variant
from authoring.feedback_space import CHOICE_NOTE, Mistake, code_note, formula_mistakes, numeric_mistakes
from chainrule import Analysis, graph_svg
from chainrule.picture.disclosure import Disclosure
from grader.pictures import release_disclosure
from grader.selectors import REVEAL_WORDS, document_released
from grading.answer_grading import Graded, answers_grade, graded_svg, wrong_highlight
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
    as_student: list[dict[str, Any]] = field(default_factory=list)  # the trial under each release level


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
                               expected_shown=True)
    except AnswerErrors as exc:
        preview.trial_errors = exc.errors
        return
    except ReferenceRunError as exc:
        preview.trial_errors = {"reference": str(exc)}
        return
    preview.trial = graded.document
    analysis = variant_analysis(variant=variant)
    preview.trial_svg = graded_svg(analysis=analysis, graded=graded)
    preview.as_student = [_as_student(assignment=assignment, analysis=analysis, graded=graded, when=when, release=level)
                          for when, level in _moments(assignment)]


def _moments(assignment: Assignment) -> list[tuple[str, str]]:
    """(when, release level) of each phase a student goes through: one when the levels are the same
    or the reveal moment never comes."""
    before, after = assignment.releases
    moment = REVEAL_WORDS.get(Assignment.Reveal(assignment.reveal))
    if moment is None or before == after:
        return [("Every attempt", before)]
    return [("Before the reveal", before), (moment[0].upper() + moment[1:], after)]


def _as_student(*, assignment: Assignment, analysis: Analysis, graded: Graded, when: str,
                release: str) -> dict[str, Any]:
    """The trial's result as a student sees it at this release level: the document and the picture."""
    document = document_released(document=graded.document, release=release)
    correct = {key for key, diagnosis in graded.diagnoses.items() if diagnosis.correct}
    disclosure = release_disclosure(release=release, assignment=assignment, correct=correct)
    svg = "" if disclosure is None else graph_svg(analysis=analysis, highlight=wrong_highlight(graded.diagnoses),
                                                   disclosure=disclosure)
    return {"when": when, "release": release, "label": dict(RELEASE_CHOICES)[release], "document": document,
            "svg": svg}


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
