"""`manage.py grade`: every seed number, each diagnosis kind, bad input exits 2."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from grader.models import Submission

pytestmark = pytest.mark.django_db

SEED_ANSWERS = [
    ("positive-gradient", ["x.grad=7"]),
    ("negative-gradient", ["x.grad=-8"]),
    ("dead-relu", ["x.grad=0"]),
    ("multiple-paths", ["x.grad=7"]),
    ("accumulation", ["x.grad=8"]),
    ("detach", ["x.grad=4"]),
    ("non-scalar", ["x.grad=[2, 4, 6]"]),
    ("linear-layer", ["w.grad=[1, 2]", "b.grad=1"]),
    ("untracked-leaf", ["w.grad=2", "x.grad=None"]),
    ("visual-walkthrough", ["x.grad=7", "y.grad=2"]),
]


def grade(slug: str, *answers: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("grade", slug, *answers, "--json", stdout=out)
    document: dict[str, Any] = json.loads(out.getvalue())
    return document


def part(document: dict[str, Any], key: str) -> dict[str, Any]:
    return next(p for p in document["parts"] if p["part"] == key)


@pytest.mark.parametrize(("slug", "answers"), SEED_ANSWERS)
def test_every_seed_answer_is_correct(slug: str, answers: list[str]) -> None:
    document = grade(slug, *answers)
    assert document["assignment"] == slug
    answered = [p for p in document["parts"] if p["answer"]]
    assert [p["correct"] for p in answered] == [True] * len(answers)
    assert document["score"] == sum(p["max_score"] for p in answered) == len(answers)


@pytest.mark.parametrize(
    ("slug", "answer", "kind", "path"),
    [
        ("visual-walkthrough", "x.grad=4", "missing_path", ["x", "mul", "add", "z"]),
        ("visual-walkthrough", "x.grad=3", "missing_path", ["x", "pow", "add", "z"]),
        ("visual-walkthrough", "x.grad=12", "product_of_paths", None),
        ("detach", "x.grad=12", "extra_path", ["x", "pow", "detach", "mul", "z"]),
        ("negative-gradient", "x.grad=16", "sign_error", ["x", "pow", "sub", "z"]),
        ("dead-relu", "x.grad=1", "dead_branch", ["x", "relu", "y"]),
        ("accumulation", "x.grad=4", "accumulation", None),
        ("untracked-leaf", "x.grad=0", "untracked_leaf", None),
        ("positive-gradient", "x.grad=10", "forward_value", None),
        ("non-scalar", "x.grad=12", "shape", None),
        ("negative-gradient", "x.grad=-2", "wrong_local_derivative", ["x", "pow", "sub", "z"]),
        ("multiple-paths", "x.grad=6", "missing_path", ["x", "add", "z"]),
        ("visual-walkthrough", "x.grad=123", "unknown", None),
    ],
)
def test_a_wrong_answer_is_diagnosed_with_its_path(slug: str, answer: str, kind: str, path: list[str] | None) -> None:
    key = answer.split("=")[0]
    result = part(grade(slug, answer), key)
    assert result["correct"] is False and result["score"] == 0
    assert result["diagnosis"]["kind"] == kind
    assert result["diagnosis"]["message"]
    if path is not None:
        assert path in result["diagnosis"]["paths"]


def test_the_text_output_explains_the_wrong_path() -> None:
    out = io.StringIO()
    call_command("grade", "visual-walkthrough", "x.grad=4", "y.grad=2", stdout=out)
    text = out.getvalue()
    assert "visual-walkthrough: 1 / 5" in text
    assert "missing_path" in text and "mul" in text


def test_it_writes_the_graph_with_the_missing_path_highlighted(tmp_path: Path) -> None:
    svg = tmp_path / "graph.svg"
    call_command("grade", "visual-walkthrough", "x.grad=4", "--svg", str(svg), stdout=io.StringIO())
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") or "<svg" in text[:400]
    assert "mul" in text and "pow" in text and "add" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["visual-walkthrough", "x.grad="], "x.grad"),
        (["visual-walkthrough", "x.grad=seven"], "x.grad"),
        (["visual-walkthrough", "x.grad=nan"], "x.grad"),
        (["visual-walkthrough", "x.grad=inf"], "x.grad"),
        (["visual-walkthrough", "x.grad=1e999"], "x.grad"),
        (["non-scalar", "x.grad=[1,2"], "x.grad"),
        (["visual-walkthrough", "x.grad=" + "1" * 100_000], "x.grad"),
        (["visual-walkthrough", "q.grad=1"], "no part"),
        (["no-such-assignment", "x.grad=1"], "unknown assignment"),
        (["visual-walkthrough", "x.grad"], "PART=ANSWER"),
        (["visual-walkthrough"], "at least one"),
    ],
)
def test_bad_input_exits_2_with_a_message_and_stores_nothing(args: list[str], message: str) -> None:
    with pytest.raises(CommandError) as caught:
        call_command("grade", *args, stdout=io.StringIO())
    assert caught.value.returncode == 2
    assert message in str(caught.value)
    assert Submission.objects.count() == 0


TRACKS_X = ("x = torch.tensor([x0], requires_grad=True)\nw = torch.tensor([0.0], requires_grad=True)\n"
            "with torch.no_grad():\n    w += w0\nz = w * x\nz.backward()\n")


def test_a_fix_that_tracks_x_is_incorrect_and_earns_nothing(tmp_path: Path) -> None:
    """On the exam twist, x.grad is None: a fix leaving a number there was shown "incorrect 1 / 1"
    and counted in the total, because a gradient expected to be None earned no share of its own."""
    source = tmp_path / "fix.py"
    source.write_text(TRACKS_X)
    document = grade_code_file("untracked-leaf", f"fix={source}")
    fix = part(document, "fix")
    assert fix["correct"] is False and fix["diagnosis"]["kind"] == "untracked_leaf"
    assert fix["score"] == 0 and fix["max_score"] == 1
    assert document["score"] == 0
    out = io.StringIO()
    call_command("grade", "untracked-leaf", "--code-file", f"fix={source}", stdout=out)
    assert "untracked-leaf: 0 / 3" in out.getvalue()
    assert "incorrect (0/1)" in out.getvalue()


def grade_code_file(slug: str, *specs: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("grade", slug, *(arg for spec in specs for arg in ("--code-file", spec)), "--json", stdout=out)
    document: dict[str, Any] = json.loads(out.getvalue())
    return document


def test_a_function_part_asking_for_shares_is_partly_right(tmp_path: Path) -> None:
    """grad_z's config says `partial = true`: one of its two values right earns half, told "partly right"."""
    source = tmp_path / "grad_z.py"
    source.write_text("def grad_z(x, y):\n    return 2*x, x\n")
    grad_z = part(grade_code_file("visual-walkthrough", f"grad_z={source}"), "grad_z")
    assert grad_z["correct"] is False and grad_z["score"] == 1.0 and grad_z["max_score"] == 2.0
    out = io.StringIO()
    call_command("grade", "visual-walkthrough", "--code-file", f"grad_z={source}", stdout=out)
    assert "partly right (1/2)" in out.getvalue()


def test_a_formula_key_is_a_formula_and_a_code_key_is_code(tmp_path: Path) -> None:
    """The expected answer of a formula part was shown as a number, a code part's as a Python dict."""
    source = tmp_path / "grad_z.py"
    source.write_text("def grad_z(x, y):\n    return 2*x, x\n")
    out = io.StringIO()
    call_command("grade", "visual-walkthrough", "dz_dx=2*x", "--code-file", f"grad_z={source}", "--json", stdout=out)
    document = json.loads(out.getvalue())
    assert part(document, "dz_dx")["expected_text"] == "y + 2*x   (= 7 at x = 2, y = 3)"
    assert part(document, "grad_z")["expected_text"] == "grad_z(2, 3)  # returns (7, 2)"
    fix = tmp_path / "fix.py"
    fix.write_text(TRACKS_X)
    document = grade_code_file("untracked-leaf", f"fix={fix}")
    assert part(document, "fix")["expected_text"] == "w.grad  # [2]\nx.grad  # None"
