"""What the student pages say in words: choices by their option text, the late penalty, verdicts."""

from __future__ import annotations

import json

from assignments.templatetags.statement import answer_text, late_policy_words, late_words, verdict
from grading.choice_parts import missing_options_text


def test_a_multiple_choice_answer_reads_as_its_options() -> None:
    stored = json.dumps(["x → add → z", "x → mul → add → z"])  # the form stores \u2192 escapes
    assert "\\u2192" in stored
    assert answer_text(stored) == "x → add → z; x → mul → add → z"
    assert answer_text("[2, 4, 6]") == "[2, 4, 6]"  # a vector stays a vector
    assert answer_text("rising") == "rising"


def test_the_late_penalty_is_said_in_words() -> None:
    assert late_words({"late_factor": 0.5, "hours_late": 3.2}) == "submitted 3 h late: score × 0.5"
    assert late_words({"late_factor": 0.9, "hours_late": 0.25}) == "submitted 15 min late: score × 0.9"
    assert late_words({"late_factor": 0.5}) == "submitted late: score × 0.5"
    assert late_words({"late_factor": 0.0, "hours_late": 50}) == "submitted 2 days 2 h late: no credit"
    assert late_policy_words([[0, 0.5]]) == "after the due date: score × 0.5"
    assert late_policy_words([[24, 0.5], [0, 0.9]]) == "up to 24 h late: score × 0.9; 24 h late or more: score × 0.5"


def test_plurals_and_verdicts_are_words() -> None:
    assert missing_options_text(1) == "One right option is not ticked: every option that holds must be chosen."
    assert missing_options_text(2).startswith("2 right options are not ticked")
    assert verdict({"correct": False, "score": 1.0, "max_score": 2.0}) == "partly right"


def test_a_choice_is_stored_as_its_option_text() -> None:
    from grader.forms import ChoiceAnswerField

    field = ChoiceAnswerField(required=False, choices=[("x → add → z", "x → add → z"), ("none", "none")])
    stored = field.clean(["x → add → z"])
    assert stored == '["x → add → z"]' and json.loads(stored) == ["x → add → z"]
