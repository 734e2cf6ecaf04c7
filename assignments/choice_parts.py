"""Choice parts (single or multiple choice): their config and their grading. No Django.

config: options = ["rising", "falling"], answer = ["rising"], multiple = false,
        feedback = {falling = "z grows with x here: look at the sign of dz/dx."} (optional)

A student's answer is the option text (single) or a JSON list of option texts (multiple).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from chainrule import AnswerError, Diagnosis

CHOICE_FIELDS = {"options", "answer", "multiple", "feedback"}
MAX_OPTIONS = 20

Fail = Callable[[str, str], Exception]


def choice_config(config: dict[str, Any], *, fail: Fail) -> dict[str, Any]:
    extra = sorted(set(config) - CHOICE_FIELDS)
    if extra:
        raise fail(f"config.{extra[0]}", f"unknown field (allowed: {', '.join(sorted(CHOICE_FIELDS))})")
    options = config.get("options")
    if (not isinstance(options, list) or not 2 <= len(options) <= MAX_OPTIONS
            or not all(isinstance(o, str) and o.strip() for o in options)):
        raise fail("config.options", f"must be a list of 2 to {MAX_OPTIONS} non-empty strings")
    if len(set(options)) != len(options):
        raise fail("config.options", "lists the same option twice")
    multiple = config.get("multiple", False)
    if not isinstance(multiple, bool):
        raise fail("config.multiple", "must be true or false")
    answer = config.get("answer")
    answer = [answer] if isinstance(answer, str) else answer
    if not isinstance(answer, list) or not answer or any(a not in options for a in answer):
        raise fail("config.answer", "must name one or more of the options")
    if not multiple and len(answer) != 1:
        raise fail("config.answer", "a single-choice part has exactly one right option (or set multiple = true)")
    feedback = config.get("feedback", {})
    if not isinstance(feedback, dict) or any(k not in options or not isinstance(v, str) for k, v in feedback.items()):
        raise fail("config.feedback", "must map options to messages")
    return {"options": list(options), "answer": sorted(set(answer), key=options.index), "multiple": multiple,
            **({"feedback": dict(feedback)} if feedback else {})}


def choice_parse(text: str, *, config: dict[str, Any]) -> list[str]:
    """The chosen options, or AnswerError naming the options when the text picks none of them."""
    options: list[str] = config["options"]
    chosen: Any = text
    if config.get("multiple") and text.strip().startswith("["):
        try:
            chosen = json.loads(text)
        except json.JSONDecodeError:
            raise AnswerError('Give the chosen options as a JSON list, e.g. ["a", "b"].') from None
    chosen = chosen if isinstance(chosen, list) else [chosen]
    unknown = [c for c in chosen if c not in options]
    if unknown or not chosen:
        raise AnswerError(f"Choose among: {', '.join(options)}.")
    if not config.get("multiple") and len(chosen) > 1:
        raise AnswerError("Choose exactly one option.")
    return sorted(set(chosen), key=options.index)


def choice_diagnosis(*, key: str, text: str, config: dict[str, Any]) -> Diagnosis:
    chosen = choice_parse(text, config=config)
    right: list[Any] = list(config["answer"])  # option texts; shown to staff as the expected value
    if chosen == right:
        return Diagnosis(part=key, correct=True, kind="correct", paths=[], message="Correct.", expected=right)
    messages = [config.get("feedback", {}).get(option, "") for option in chosen if option not in right]
    missing = [option for option in right if option not in chosen]
    text_parts = [m for m in messages if m]
    if config.get("multiple") and missing and not text_parts:
        text_parts.append(f"{len(missing)} right option(s) not chosen.")
    message = " ".join(text_parts) or "Not this one: look again at the graph."
    return Diagnosis(part=key, correct=False, kind="wrong_choice", paths=[], message=message, expected=right)
