"""Choice parts (single or multiple choice): reading and grading an answer. No Django.

Their config (ChoiceConfig) is validated in part_config.py. A student's answer is the option text
(single) or a JSON list of option texts (multiple).
"""

from __future__ import annotations

import json
from typing import Any

from assignments.part_config import ChoiceConfig
from chainrule import AnswerError, Diagnosis


def choice_parse(text: str, *, config: ChoiceConfig) -> list[str]:
    """The chosen options, or AnswerError naming the options when the text picks none of them."""
    options = list(config.options)
    chosen: Any = text
    if config.multiple and text.strip().startswith("["):
        try:
            chosen = json.loads(text)
        except json.JSONDecodeError:
            raise AnswerError('Give the chosen options as a JSON list, e.g. ["a", "b"].') from None
    chosen = chosen if isinstance(chosen, list) else [chosen]
    unknown = [c for c in chosen if c not in options]
    if unknown or not chosen:
        raise AnswerError(f"Choose among: {', '.join(options)}.")
    if not config.multiple and len(chosen) > 1:
        raise AnswerError("Choose exactly one option.")
    return sorted(set(chosen), key=options.index)


def missing_options_text(count: int) -> str:
    """How many right options the student left unticked, in words."""
    if count == 1:
        return "One right option is not ticked: every option that holds must be chosen."
    return f"{count} right options are not ticked: every option that holds must be chosen."


def choice_diagnosis(*, key: str, text: str, config: ChoiceConfig) -> Diagnosis:
    chosen = choice_parse(text, config=config)
    right: list[Any] = list(config.answer)  # option texts; shown to staff as the expected value
    if chosen == right:
        return Diagnosis(part=key, correct=True, kind="correct", paths=[], message="Correct.", expected=right)
    messages = [config.feedback.get(option, "") for option in chosen if option not in right]
    missing = [option for option in right if option not in chosen]
    text_parts = [m for m in messages if m]
    if config.multiple and missing and not text_parts:
        text_parts.append(missing_options_text(len(missing)))
    message = " ".join(text_parts) or "Not this one: look again at the graph."
    return Diagnosis(part=key, correct=False, kind="wrong_choice", paths=[], message=message, expected=right)
