"""Choice parts: single and multiple choice graded with the author's feedback, and the answer form."""

from __future__ import annotations

import json

import pytest

from assignments.models import Assignment
from grader.forms import AnswerForm
from grading.answer_grading import answers_grade
from grading.answer_parsing import AnswerErrors, answers_parse
from grading.variants import variant_get

pytestmark = pytest.mark.django_db
FACTORS = ["x → mul → add → z (first factor)", "x → mul → add → z (second factor)"]


def _part(slug: str, answers: dict[str, str]) -> dict[str, object]:
    assignment = Assignment.objects.get(slug=slug)
    answers_parse(assignment=assignment, answers=answers, code={})
    variant = variant_get(assignment=assignment, params=assignment.params)
    document = answers_grade(assignment=assignment, variant=variant, answers=answers, code={}, expected_shown=False)
    part: dict[str, object] = next(p for p in document.document["parts"] if p["part"] in answers)
    return part


def test_a_wrong_single_choice_gets_the_authors_message_and_no_expected_value() -> None:
    part = _part("negative-gradient", {"direction": "rising"})
    assert part["correct"] is False and part["score"] == 0
    assert "x.grad is negative at x = 2" in part["diagnosis"]["message"]  # type: ignore[index]
    assert "expected" not in part
    assert _part("negative-gradient", {"direction": "falling"})["correct"] is True


def test_multiple_choice_needs_every_right_option_and_only_those() -> None:
    missing = _part("multiple-paths", {"paths": json.dumps(FACTORS)})
    assert missing["correct"] is False and "One right option is not ticked" in missing["diagnosis"]["message"]  # type: ignore[index]
    wrong = _part("multiple-paths", {"paths": json.dumps([*FACTORS, "x → add → z", "none: x is a leaf"])})
    assert wrong["correct"] is False and "every path" in wrong["diagnosis"]["message"]  # type: ignore[index]
    assert _part("multiple-paths", {"paths": json.dumps([*FACTORS, "x → add → z"])})["correct"] is True


def test_an_option_that_does_not_exist_is_refused_before_grading() -> None:
    assignment = Assignment.objects.get(slug="positive-gradient")
    with pytest.raises(AnswerErrors, match="Choose among: rising, falling, neither"):
        answers_parse(assignment=assignment, answers={"direction": "up"}, code={})


def test_the_form_offers_radio_buttons_and_checkboxes_that_post_the_api_text() -> None:
    single = AnswerForm({"direction": "falling"}, assignment=Assignment.objects.get(slug="positive-gradient"))
    assert single.is_valid() and single.answers()["direction"] == "falling"
    assert 'type="radio"' in str(single["direction"])
    multiple = AnswerForm({"paths": FACTORS}, assignment=Assignment.objects.get(slug="multiple-paths"))
    assert multiple.is_valid() and json.loads(multiple.answers()["paths"]) == FACTORS
    assert 'type="checkbox"' in str(multiple["paths"])
