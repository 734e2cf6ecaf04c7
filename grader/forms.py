"""The answer form of an assignment page: one field per part, named by the part key."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from django import forms

from assignments.models import Assignment, Part
from chainrule.code_limits import MAX_CODE_CHARS

# Examples of the accepted notation that answer no part of the course (tests/test_hardening.py checks).
ACCEPTED_FORMATS = ("0.25", "-1.5", "3/8", "1e-3", "[0.5, -1, 2.5]")
MAX_ANSWER = 2_000


@dataclass(frozen=True)
class PartRow:
    """What the template needs to lay out one part accessibly."""

    part: Part
    field: forms.BoundField
    dom_id: str

    @property
    def help_id(self) -> str:
        return f"{self.dom_id}-help"

    @property
    def error_id(self) -> str:
        return f"{self.dom_id}-error"


def dom_id(key: str) -> str:
    """`x.grad` → `answer-x-grad`: a dot in an id would read as a class in CSS selectors."""
    return "answer-" + re.sub(r"[^A-Za-z0-9_-]+", "-", key)


class AnswerForm(forms.Form):
    def __init__(self, *args: Any, assignment: Assignment, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.parts = list(assignment.parts.all())
        for part in self.parts:
            self.fields[part.key] = _field(part)

    def answers(self) -> dict[str, str]:
        """Non-empty answers to the numeric and symbolic parts, as typed (after form cleaning)."""
        return self._typed(code=False)

    def code(self) -> dict[str, str]:
        return self._typed(code=True)

    def _typed(self, *, code: bool) -> dict[str, str]:
        return {
            part.key: self.cleaned_data[part.key]
            for part in self.parts
            if (part.kind == Part.Kind.CODE) == code and _answered(part, self.cleaned_data.get(part.key, ""))
        }

    def add_answer_errors(self, errors: dict[str, str]) -> None:
        """Per-part messages from the grader beside their fields; others above the form."""
        for key, message in errors.items():
            self.add_error(key if key in self.fields else None, message)

    @property
    def rows(self) -> list[PartRow]:
        rows = []
        for part in self.parts:
            row = PartRow(part=part, field=self[part.key], dom_id=dom_id(part.key))
            described = [row.help_id] + ([row.error_id] if row.field.errors else [])
            row.field.field.widget.attrs["aria-describedby"] = " ".join(described)
            rows.append(row)
        return rows


def _answered(part: Part, text: str) -> bool:
    """Empty fields and untouched starter code are not answers (nothing is graded for them)."""
    starter = part.code.starter if part.kind == Part.Kind.CODE else ""
    return bool(text.strip()) and text.split() != starter.split()


class ChoiceAnswerField(forms.MultipleChoiceField):
    """Checkboxes whose answer is the JSON list of the chosen options (the API's text form)."""

    def clean(self, value: Any) -> str:
        chosen = super().clean(value)
        return json.dumps(list(chosen), ensure_ascii=False) if chosen else ""  # option texts as written

    def prepare_value(self, data: Any) -> Any:
        if isinstance(data, str) and data.startswith("["):
            try:
                return json.loads(data)
            except json.JSONDecodeError:
                return []
        return data


def _choice_field(part: Part, attrs: dict[str, str]) -> forms.Field:
    choices = [(option, option) for option in part.choice.options]
    if part.choice.multiple:
        return ChoiceAnswerField(required=False, label=part.key, choices=choices,
                                 widget=forms.CheckboxSelectMultiple(attrs={"id": attrs["id"]}))
    return forms.ChoiceField(required=False, label=part.key, choices=choices,
                             widget=forms.RadioSelect(attrs={"id": attrs["id"]}))


def _field(part: Part) -> forms.Field:
    attrs = {"id": dom_id(part.key), "autocomplete": "off", "autocapitalize": "off", "spellcheck": "false"}
    if part.kind == Part.Kind.CHOICE:
        return _choice_field(part, attrs)
    if part.kind == Part.Kind.CODE:
        return forms.CharField(required=False, max_length=MAX_CODE_CHARS, strip=False, label=part.key,
                               initial=part.code.starter,  # the signature or the buggy code
                               widget=forms.Textarea(attrs={**attrs, "rows": 10, "class": "code"}))
    return forms.CharField(required=False, max_length=MAX_ANSWER, label=part.key,
                           widget=forms.TextInput(attrs=attrs))
