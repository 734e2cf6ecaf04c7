"""Authoring forms. They only shape catalog data: `catalog.spec` validates it (one rule set
for the web form, the TOML files and `load_assignments --check`)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django import forms

from assignments.models import RELEASE_CHOICES, Assignment
from catalog.errors import CatalogError
from catalog.spec import KINDS, REVEALS
from catalog.toml_text import toml_loads

DATETIME_FORMAT = "%Y-%m-%dT%H:%M"
COURSE_LEVEL = [("", "the course's setting")]
PART_FIELD_NAMES = ("key", "kind", "points", "rel_tol", "abs_tol", "prompt", "hint", "expected", "config")


def _toml_table(text: str, label: str) -> dict[str, Any]:
    return toml_loads(text, path="form", field=label)


def _toml_text(table: dict[str, Any]) -> str:
    import tomli_w

    return tomli_w.dumps(table) if table else ""


class AssignmentForm(forms.Form):
    slug = forms.SlugField(max_length=50, help_text="Lowercase words joined by '-'; fixed once created")
    title = forms.CharField(max_length=200)
    statement = forms.CharField(widget=forms.Textarea(attrs={"rows": 8, "class": "statement-source"}),
                                help_text="Markdown with $…$ math, shown to students as previewed")
    reference = forms.CharField(strip=False, widget=forms.Textarea(attrs={"rows": 12, "data-code-editor": "python",
                                                                          "spellcheck": "false"}),
                                help_text="PyTorch program; parameters are variables (e.g. x0)")
    params = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3, "class": "code"}),
                             help_text="Fixed values, one per line: x0 = 2.0")
    variants = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3, "class": "code"}),
                               help_text="Ranges or choices per student: x0 = { min = 1, max = 4, step = 0.5 } "
                                         "or y0 = { choices = [2, 3] }")
    time_zone = forms.CharField(max_length=64, initial="UTC", help_text="e.g. Europe/Paris; dates below are in it")
    opens_at = forms.DateTimeField(required=False, input_formats=[DATETIME_FORMAT],
                                   widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format=DATETIME_FORMAT))
    due_at = forms.DateTimeField(required=False, input_formats=[DATETIME_FORMAT],
                                 widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format=DATETIME_FORMAT))
    closes_at = forms.DateTimeField(required=False, input_formats=[DATETIME_FORMAT],
                                    widget=forms.DateTimeInput(attrs={"type": "datetime-local"},
                                                               format=DATETIME_FORMAT))
    late_penalty = forms.CharField(required=False, help_text="Late credit: hours_late:factor, e.g. 0:0.9, 24:0.5")
    max_attempts = forms.IntegerField(required=False, min_value=1, help_text="Empty: unlimited")
    counts = forms.ChoiceField(choices=Assignment.Counts.choices, initial="best")
    rate_limit = forms.IntegerField(required=False, min_value=0, help_text="Submissions a minute; empty: site default")
    hints_after = forms.IntegerField(required=False, min_value=0, initial=0, help_text="Show hints after N attempts")
    reveal = forms.ChoiceField(choices=[(r, r.replace("_", " ")) for r in REVEALS], initial="never",
                               help_text="The reveal moment: when the feedback after takes over from the one before")
    release_before = forms.ChoiceField(choices=COURSE_LEVEL + RELEASE_CHOICES, required=False,
                                       help_text="What a wrong attempt shows a student before the reveal moment")
    release_after = forms.ChoiceField(choices=COURSE_LEVEL + RELEASE_CHOICES, required=False,
                                      help_text="What it shows from the reveal moment on")

    def __init__(self, *args: Any, slug_fixed: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if slug_fixed:
            self.fields["slug"].disabled = True


class PartForm(forms.Form):
    key = forms.CharField(max_length=64, help_text="x.grad for a numeric part; a name otherwise")
    kind = forms.ChoiceField(choices=[(k, k) for k in KINDS], initial="numeric")
    points = forms.FloatField(initial=1)
    rel_tol = forms.FloatField(initial=1e-4)
    abs_tol = forms.FloatField(initial=1e-6)
    prompt = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    hint = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    expected = forms.CharField(required=False, help_text="Optional cross-check, e.g. 7 or [1, 2]")
    config = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3, "class": "code"}),
                             help_text="TOML; choosing a kind fills in its template (see “Config for each kind” below)")


# absolute_max: Django's default (max_num + 1000) built and rendered 1,050 part forms for a forged
# parts-TOTAL_FORMS, ~5 s of CPU in the request.
PartFormSet = forms.formset_factory(PartForm, extra=1, can_delete=True, max_num=50, absolute_max=50,
                                    validate_max=True)


def catalog_from_forms(*, form: AssignmentForm, parts: Any) -> dict[str, Any]:
    """Catalog data from valid forms. Raises CatalogError for TOML snippets that do not parse."""
    data = form.cleaned_data
    zone = data["time_zone"]
    policy: dict[str, Any] = {"time_zone": zone, "counts": data["counts"], "reveal": data["reveal"],
                              "hints_after": data.get("hints_after") or 0,
                              "late_penalty": _late_steps(data.get("late_penalty") or "")}
    for name in ("opens_at", "due_at", "closes_at"):
        if data.get(name):
            policy[name] = _aware(data[name], zone)
    for name in ("max_attempts", "rate_limit"):
        if data.get(name) is not None:
            policy[name] = data[name]
    for name in ("release_before", "release_after"):
        if data.get(name):
            policy[name] = data[name]
    catalog: dict[str, Any] = {
        "slug": data["slug"], "title": data["title"], "statement": data["statement"], "reference": data["reference"],
        "params": _toml_table(data.get("params") or "", "params"), "policy": policy,
        "parts": [_part(part_form.cleaned_data, index) for index, part_form in enumerate(_kept(parts))],
    }
    variants = _toml_table(data.get("variants") or "", "variants")
    if variants:
        catalog["variants"] = variants
    return catalog


def _kept(parts: Any) -> list[Any]:
    return [f for f in parts.forms if f.cleaned_data and not f.cleaned_data.get("DELETE") and f.cleaned_data.get("key")]


def _aware(value: datetime, zone: str) -> datetime:
    try:
        tz = ZoneInfo(zone)
    except (ValueError, KeyError):
        tz = ZoneInfo("UTC")
    return value.replace(tzinfo=None).replace(tzinfo=tz)


def _late_steps(text: str) -> list[list[float]]:
    steps = []
    for item in filter(None, (piece.strip() for piece in re.split(r"[,;\n]", text))):
        hours, _, factor = item.partition(":")
        try:
            steps.append([float(hours), float(factor)])
        except ValueError:
            raise CatalogError("form", "policy.late_penalty", f"{item!r} is not hours:factor, e.g. 24:0.5") from None
    return steps


def _part(data: dict[str, Any], index: int) -> dict[str, Any]:
    part = {name: data[name] for name in ("key", "kind", "points", "rel_tol", "abs_tol")}
    for name in ("prompt", "hint"):
        if data.get(name):
            part[name] = data[name]
    if (data.get("expected") or "").strip():
        part["expected"] = data["expected"].strip()
    config = _toml_table(data.get("config") or "", f"parts[{index}].config")
    if config:
        part["config"] = config
    return part


def initial_from_catalog(data: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Initial values of the assignment form and of each part form."""
    policy = data.get("policy", {})
    zone = policy.get("time_zone", "UTC")
    initial: dict[str, Any] = {
        "slug": data["slug"], "title": data["title"], "statement": data["statement"], "reference": data["reference"],
        "params": _toml_text(data.get("params", {})), "variants": _toml_text(data.get("variants", {})),
        "time_zone": zone, "counts": policy.get("counts", "best"), "reveal": policy.get("reveal", "never"),
        "hints_after": policy.get("hints_after", 0), "max_attempts": policy.get("max_attempts"),
        "rate_limit": policy.get("rate_limit"), "release_before": policy.get("release_before", ""),
        "release_after": policy.get("release_after", ""),
        "late_penalty": ", ".join(f"{h:g}:{f:g}" for h, f in policy.get("late_penalty", [])),
    }
    for name in ("opens_at", "due_at", "closes_at"):
        value = policy.get(name)
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        if value is not None:
            initial[name] = value.astimezone(ZoneInfo(zone)).replace(tzinfo=None)
    parts = [
        {**{n: part.get(n, "") for n in PART_FIELD_NAMES if n not in ("expected", "config")},
         "expected": "" if "expected" not in part else str(part["expected"]),
         "config": _toml_text(part.get("config", {}))}
        for part in data.get("parts", [])
    ]
    return initial, parts


def catalog_json(data: dict[str, Any]) -> dict[str, Any]:
    """Drafts are stored as JSON: dates as ISO text (spec_from_data wants datetimes back)."""
    policy = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in data.get("policy", {}).items()}
    return {**data, "policy": policy}


def catalog_from_json(data: dict[str, Any]) -> dict[str, Any]:
    policy = {k: datetime.fromisoformat(v) if k.endswith("_at") and isinstance(v, str) else v
              for k, v in data.get("policy", {}).items()}
    return {**data, "policy": policy}
