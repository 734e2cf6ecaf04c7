"""The answer key a student sees once the reveal policy allows: each part's expected answer for
their own values, and the picture of how autograd got them.

Read from the variant's cached analysis only: a page view never runs the reference. When the
student's variant was never computed (they did not submit), its computation is queued on the
maintenance lane and the page says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache

from assignments.models import Assignment, Part, Variant
from chainrule import Analysis, graph_svg
from chainrule.picture.disclosure import Disclosure
from grading.part_answers import part_answer, part_answer_text
from grading.reference import ReferenceRunError
from grading.variants import params_for_student, reference_hash, variant_get
from infra.enqueue import enqueue
from infra.lanes import MAINTENANCE

log = logging.getLogger(__name__)
WARM_DEDUP_SECONDS = 60


@dataclass(frozen=True)
class AnswerKey:
    answers: dict[str, Any] = field(default_factory=dict)  # part key → expected answer (the API's values)
    pending: bool = False  # the student's values have not been run yet (queued now)
    texts: dict[str, str] = field(default_factory=dict)  # part key → the answer written as the part is answered
    code_keys: frozenset[str] = frozenset()  # parts whose answer is shown as code

    @property
    def rows(self) -> list[tuple[str, str, bool]]:
        """(part key, the answer as written, shown as a code block) for the page."""
        return [(key, self.texts.get(key, str(value)), key in self.code_keys) for key, value in self.answers.items()]


def _cached_analysis(*, assignment: Assignment, student_id: int) -> dict[str, Any] | None:
    params = params_for_student(assignment=assignment, student_id=student_id)
    digest = reference_hash(assignment=assignment, params=params)
    analysis: dict[str, Any] | None = (
        Variant.objects.filter(assignment=assignment, reference_hash=digest).exclude(analysis=None)
        .values_list("analysis", flat=True).first())
    return analysis


def answer_key(*, assignment: Assignment, student_id: int) -> AnswerKey:
    """Call only when the release level (grader.selectors.release_for) shows this student the expected
    answers (or for the course's staff)."""
    data = _cached_analysis(assignment=assignment, student_id=student_id)
    if data is None:
        _warm_later(assignment_id=assignment.pk, student_id=student_id)
        return AnswerKey(pending=True)
    analysis = Analysis.from_json(data)
    params = params_for_student(assignment=assignment, student_id=student_id)
    parts = list(assignment.parts.all())
    answers = {part.key: part_answer(part, analysis) for part in parts}
    texts = {part.key: part_answer_text(part, _seed_value(part, analysis, answers[part.key]), params) for part in parts}
    return AnswerKey(answers=answers, texts=texts,
                     code_keys=frozenset(part.key for part in parts if part.kind == Part.Kind.CODE))


def _seed_value(part: Part, analysis: Analysis, answer: Any) -> Any:
    """The value at the student's values (a formula part's answer is its formula)."""
    if part.kind == Part.Kind.SYMBOLIC:
        reference = analysis.parts.get(str(part.config.get("of", "")))
        return reference.value if reference is not None else None
    return answer


def answer_key_svg(*, assignment: Assignment, student_id: int) -> str | None:
    """How autograd got every answer of this student's variant (None until it is computed)."""
    data = _cached_analysis(assignment=assignment, student_id=student_id)
    if data is None:
        return None
    return graph_svg(analysis=Analysis.from_json(data), title="How autograd got the answers",
                     disclosure=Disclosure(everything=True))


def _warm_later(*, assignment_id: int, student_id: int) -> None:
    if not cache.add(f"warm-variant:{assignment_id}:{student_id}", 1, timeout=WARM_DEDUP_SECONDS):
        return  # queued a moment ago
    enqueue("grader.warm_variant", assignment_id, student_id, lane=MAINTENANCE,
            if_lost="the next page view asks again")


def variant_warm(*, assignment_id: int, student_id: int) -> None:
    """Compute a student's variant (the worker side of `_warm_later`); a failing reference is stored
    on the variant and shown to the course's staff, not raised."""
    assignment = Assignment.objects.filter(pk=assignment_id).first()
    if assignment is None:
        return
    try:
        variant_get(assignment=assignment, params=params_for_student(assignment=assignment, student_id=student_id))
    except ReferenceRunError as exc:
        log.warning("the reference fails for student %s on %s: %s", student_id, assignment.slug, exc)
