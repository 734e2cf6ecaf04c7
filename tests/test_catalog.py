"""The catalog loader: all ten seed assignments, idempotent upserts, clear errors."""

from __future__ import annotations

import io
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from assignments.models import Assignment, Part
from authoring.management.commands import load_assignments
from catalog.errors import CatalogError
from catalog.spec import spec_from_data
from sandbox.client import SandboxUnavailable

SEED_SLUGS = {
    "positive-gradient", "negative-gradient", "dead-relu", "multiple-paths", "accumulation",
    "detach", "non-scalar", "linear-layer", "untracked-leaf", "visual-walkthrough",
}

GOOD = {
    "slug": "tiny", "title": "Tiny", "statement": "$z = x^2$",
    "reference": "x = torch.tensor(x0, requires_grad=True)\nz = x**2\nz.backward()\n",
    "params": {"x0": 3.0},
    "parts": [{"key": "x.grad", "kind": "numeric", "points": 1, "expected": 6.0}],
}


def _with(**changes: object) -> dict[str, object]:
    data = {**GOOD, **changes}
    return {k: v for k, v in data.items() if v is not None}


def _part(**changes: object) -> dict[str, object]:
    return _with(parts=[{**GOOD["parts"][0], **changes}])  # type: ignore[index]


@pytest.mark.django_db
def test_it_ships_all_ten_seed_assignments_with_their_part_keys() -> None:
    assert set(Assignment.objects.values_list("slug", flat=True)) >= SEED_SLUGS
    keys = {(p.assignment.slug, p.key) for p in Part.objects.select_related("assignment")}
    assert ("linear-layer", "w.grad") in keys and ("linear-layer", "b.grad") in keys
    assert ("untracked-leaf", "x.grad") in keys and ("visual-walkthrough", "y.grad") in keys


@pytest.mark.django_db
def test_loading_twice_changes_nothing() -> None:
    before = list(Assignment.objects.order_by("slug").values_list("slug", "source_hash"))
    parts = Part.objects.count()
    out = io.StringIO()
    call_command("load_assignments", stdout=out)
    assert "unchanged visual-walkthrough (visual-walkthrough.toml)" in out.getvalue()
    assert list(Assignment.objects.order_by("slug").values_list("slug", "source_hash")) == before
    assert Part.objects.count() == parts


@pytest.mark.parametrize(
    ("data", "field", "problem"),
    [
        (_with(slug=None), "slug", "is required"),
        (_with(slug="Not A Slug"), "slug", "lowercase"),
        (_with(title=""), "title", "must not be empty"),
        (_with(reference="x = (\n"), "reference", "syntax error on line"),
        # The reference is compiled in the web request (forms, API): never a 500, never seconds of CPU.
        (_with(reference="x = " + "-" * 19_000 + "1\n"), "reference", "chains more than 50 unary operators"),
        (_with(reference="f = " + "lambda: " * 2_400 + "1\n"), "reference", "more than 10 lambdas"),
        (_with(reference="x = " + "+".join(["a"] * 9_000) + "\n"), "reference", "too deeply to compile"),
        (_with(reference="x = 1\x00\n"), "reference", "cannot contain null bytes"),
        (_with(params={"x0": "two"}), "params.x0", "finite number"),
        (_with(params={"import": 1.0}), "params.import", "identifier"),
        (_with(parts=[]), "parts", "non-empty"),
        (_part(kind="essay"), "parts[0].kind", "must be one of"),
        (_part(points=0), "parts[0].points", "must be >"),
        (_part(rel_tol=-1), "parts[0].rel_tol", ">= 0"),
        (_part(key="x grad"), "parts[0].key", "not a valid key"),
        (_part(expected="seven"), "parts[0].expected", ""),
        (_part(colour="red"), "parts[0].colour", "unknown field"),
        (_with(policy={"max_attempts": 0}), "policy.max_attempts", "from 1 to 10000"),
        (_with(policy={"counts": "worst"}), "policy.counts", "'best' or 'last'"),
        (_with(variants={"y0": {"min": 1, "max": 2}}), "variants.y0", "names no parameter"),
        (_with(extra=1), "extra", "unknown field"),
        (_with(variants={"x0": {"min": 1, "max": 4, "step": 0}}), "variants.x0.step", "must be >"),
        (_with(variants={"x0": {"choices": ["a"]}}), "variants.x0.choices", "finite number"),
        (_with(variants={"x0": {"min": 1, "max": 4, "colour": 1}}), "variants.x0", "must be {min"),
        (_with(policy={"max_attempts": 2**40}), "policy.max_attempts", "1 to 10000"),
        (_part(kind="symbolic", key="dz", config={"variables": {"x": ["x0"]}, "of": "x.grad"}),
         "parts[0].config.variables.x", "must name a parameter"),
        (_part(kind="symbolic", key="dz", config={"variables": {"x": "x0"}, "of": "x.grad", "formula": "2*"}),
         "parts[0].config.formula", ""),
        (_part(kind="code", key="p", config={"mode": "program", "reads": ["x.grad"], "returns": ["x.grad"]}),
         "parts[0].config.returns", "function mode"),
        (_part(kind="code", key="p", config={"mode": "function", "function": "f", "args": [["x0"]],
                                             "returns": ["x.grad"]}), "parts[0].config.args", "parameters"),
        (_part(config={"of": "x.grad"}), "parts[0].config.of", "numeric parts take no config"),
        (_part(kind="code", key="p", config={"mode": "function", "function": "f", "args": ["x0"],
                                             "returns": ["x.grad"], "forbid_autograd": "yes"}),
         "parts[0].config.forbid_autograd", "true or false"),
        (_part(kind="code", key="p", config={"mode": "program", "reads": ["x.grad"], "starter": 3}),
         "parts[0].config.starter", "must be a string"),
    ],
)
def test_it_names_the_field_and_problem_of_a_bad_file(data: dict[str, object], field: str, problem: str) -> None:
    with pytest.raises(CatalogError) as caught:
        spec_from_data(data, path="bad.toml")
    assert caught.value.path == "bad.toml"
    assert caught.value.field == field
    assert problem in caught.value.problem


def test_it_rejects_a_duplicate_part_key() -> None:
    part = GOOD["parts"][0]  # type: ignore[index]
    with pytest.raises(CatalogError, match="used twice"):
        spec_from_data(_with(parts=[part, part]), path="dup.toml")


@pytest.mark.django_db
def test_a_broken_file_loads_nothing_and_the_others_still_load(tmp_path: Path) -> None:
    (tmp_path / "a-good.toml").write_text(_toml("good-one", expected="6.0"))
    (tmp_path / "b-wrong.toml").write_text(_toml("wrong-expected", expected="5.0"))
    (tmp_path / "c-broken.toml").write_text("slug = \n")
    err = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("load_assignments", str(tmp_path), stderr=err, stdout=io.StringIO())
    assert caught.value.returncode == 2
    assert Assignment.objects.filter(slug="good-one").exists()
    assert not Assignment.objects.filter(slug="wrong-expected").exists()
    messages = err.getvalue()
    assert "b-wrong.toml: parts.x.grad.expected: says 5.0 but the reference program gives 6.0" in messages
    assert "c-broken.toml: file: is not valid TOML" in messages


@pytest.mark.django_db
def test_a_reference_that_raises_is_reported_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "raises.toml"
    path.write_text(_toml("raises", expected="6.0").replace("z.backward()", "z.backward()\nundefined_name"))
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("load_assignments", str(path), stderr=err, stdout=io.StringIO())
    assert "raises.toml: reference:" in err.getvalue() and "undefined_name" in err.getvalue()
    assert not Assignment.objects.filter(slug="raises").exists()


@pytest.mark.django_db
def test_a_reference_formula_that_disagrees_with_autograd_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "formula.toml"
    path.write_text(_toml("bad-formula", expected="6.0") + '''
[[parts]]
key = "dz_dx"
kind = "symbolic"
config = { variables = { x = "x0" }, of = "x.grad", formula = "3*x" }
''')
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("load_assignments", str(path), stderr=err, stdout=io.StringIO())
    assert "formula.toml: parts.dz_dx.config.formula: the reference formula '3*x'" in err.getvalue()
    assert not Assignment.objects.filter(slug="bad-formula").exists()


def _toml(slug: str, *, expected: str) -> str:
    return f'''slug = "{slug}"
title = "T"
statement = "s"
reference = """
x = torch.tensor(x0, requires_grad=True)
z = x**2
z.backward()
"""
[params]
x0 = 3.0
[[parts]]
key = "x.grad"
expected = {expected}
'''


@pytest.mark.django_db
def test_a_file_that_fails_vetting_is_kept_as_a_draft_with_its_reasons(tmp_path: Path) -> None:
    from assignments.models import AssignmentVersion

    # 2x at x0 = 0.5 is 1: the answer 1 passes, so the part tests nothing.
    (tmp_path / "weak.toml").write_text(_toml("weak-one", expected="1.0").replace("x0 = 3.0", "x0 = 0.5"))
    (tmp_path / "fine.toml").write_text(_toml("fine-one", expected="6.0"))
    out = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("load_assignments", str(tmp_path), stdout=out, stderr=io.StringIO())
    assert caught.value.returncode == 1 and "1 of 2 file(s) kept as drafts" in str(caught.value)
    printed = out.getvalue()
    assert "kept as a draft weak-one (weak.toml): not published" in printed
    assert "weak.toml: parts.x.grad: the answer 1 passes" in printed
    assert "published fine-one (fine.toml) as v1" in printed
    assert not Assignment.objects.get(slug="weak-one").published
    assert Assignment.objects.get(slug="fine-one").published
    assert AssignmentVersion.objects.get(assignment__slug="fine-one").catalog == (tmp_path / "fine.toml").read_text()
    assert not AssignmentVersion.objects.filter(assignment__slug="weak-one").exists()


def test_files_load_at_once_and_two_files_of_one_slug_load_in_their_order(live_db: None, tmp_path: Path) -> None:
    """With committed rows (as on a release step), `--jobs 2` loads files in two threads: every file is
    published or refused as it would be alone, and of two files naming one slug the later one wins."""
    tag = uuid.uuid4().hex[:8]
    (tmp_path / "a.toml").write_text(_toml(f"first-{tag}", expected="6.0"))
    (tmp_path / "b.toml").write_text(_toml(f"second-{tag}", expected="6.0"))
    (tmp_path / "c.toml").write_text(_toml(f"first-{tag}", expected="6.0").replace('title = "T"', 'title = "Later"'))
    (tmp_path / "d.toml").write_text(_toml(f"wrong-{tag}", expected="5.0"))
    (tmp_path / "e.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000)  # deeper than Python's recursion
    out, err = io.StringIO(), io.StringIO()
    try:
        with pytest.raises(CommandError) as caught:
            call_command("load_assignments", str(tmp_path), "--jobs", "2", stdout=out, stderr=err)
        assert caught.value.returncode == 2
        assert Assignment.objects.get(slug=f"first-{tag}").title == "Later"
        assert Assignment.objects.get(slug=f"second-{tag}").published
        assert not Assignment.objects.filter(slug=f"wrong-{tag}").exists()
        assert "d.toml: parts.x.grad.expected: says 5.0 but the reference program gives 6.0" in err.getvalue()
        assert "e.toml: file: is nested too deeply" in err.getvalue()
        said = out.getvalue() + err.getvalue()
        assert said.index("(a.toml)") < said.index("(b.toml)") < said.index("(c.toml)")  # reported in order
    finally:
        Assignment.objects.filter(slug__endswith=tag).delete()


def test_a_loader_failure_on_one_file_is_said_on_its_line_and_the_others_still_load(
        live_db: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tag = uuid.uuid4().hex[:8]
    (tmp_path / "a.toml").write_text(_toml(f"breaks-{tag}", expected="6.0"))
    (tmp_path / "b.toml").write_text(_toml(f"loads-{tag}", expected="6.0"))
    real = load_assignments.catalog_file_load

    def failing(*, name: str, **kwargs: Any) -> Any:
        if name == "a.toml":
            raise RuntimeError("a bug in the loader")
        return real(name=name, **kwargs)

    monkeypatch.setattr(load_assignments, "catalog_file_load", failing)
    out, err = io.StringIO(), io.StringIO()
    try:
        with pytest.raises(CommandError) as caught:
            call_command("load_assignments", str(tmp_path), "--jobs", "2", stdout=out, stderr=err)
        assert caught.value.returncode == 2
        assert "a.toml: internal error (RuntimeError: a bug in the loader)" in err.getvalue()
        assert f"loads-{tag}" in out.getvalue() and Assignment.objects.get(slug=f"loads-{tag}").published
    finally:
        Assignment.objects.filter(slug__endswith=tag).delete()


def test_files_at_once_are_at_most_the_sandboxes_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    """More files at once than slots would wait in a sandbox's queue, and past the client's allowance a
    file would be refused as "sandbox unavailable"."""
    monkeypatch.setattr(load_assignments, "sandbox_status",
                        lambda: {"tls://sb-1:7000": {"slots": 2}, "tls://sb-2:7000": {"error": "refused"}})
    assert load_assignments._jobs(8, vet=True, files=10) == 2
    assert load_assignments._jobs(0, vet=True, files=10) == 2
    assert load_assignments._jobs(1, vet=True, files=10) == 1
    assert load_assignments._jobs(0, vet=False, files=10) == 1  # --no-check runs nothing in the sandbox

    def unreachable() -> dict[str, Any]:
        raise SandboxUnavailable("no sandbox answers")

    monkeypatch.setattr(load_assignments, "sandbox_status", unreachable)
    assert load_assignments._jobs(3, vet=True, files=10) == 3
    assert load_assignments._jobs(0, vet=True, files=10) == 1
