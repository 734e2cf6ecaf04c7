"""The engine is general: five assignments authored only in TOML (tests/catalog_extra)
get correct reference values and path diagnoses with no code written for them."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db
EXTRA = Path(__file__).parent / "catalog_extra"
X, Y = 0.5, -0.25


def sigmoid(v: float) -> float:
    return 1 / (1 + math.exp(-v))


@pytest.fixture(autouse=True, scope="module")
def extra_catalog(django_db_setup: None, django_db_blocker: Any) -> None:
    """Loaded once and committed: each analysis runs the reference program once."""
    with django_db_blocker.unblock():
        call_command("load_assignments", str(EXTRA), stdout=io.StringIO())


def grade(slug: str, **answers: str) -> dict[str, dict[str, Any]]:
    out = io.StringIO()
    call_command("grade", slug, *(f"{k.replace('_', '.')}={v}" for k, v in answers.items()), "--json", stdout=out)
    return {part["part"]: part for part in json.loads(out.getvalue())["parts"] if part["answer"]}


def test_hand_derived_gradients_are_correct_everywhere() -> None:
    dx = math.cos(X) * math.exp(Y) + (1 - math.tanh(X * Y) ** 2) * Y
    dy = math.sin(X) * math.exp(Y) + (1 - math.tanh(X * Y) ** 2) * X + sigmoid(Y) * (1 - sigmoid(Y))
    cases = [
        ("extra-shared-subexpression", {"x_grad": "14", "y_grad": "7", "w_grad": "2"}),
        ("extra-vector-output", {"x_grad": "[7, -10, 6.5]"}),
        ("extra-smooth-functions", {"x_grad": repr(dx), "y_grad": repr(dy)}),
        ("extra-matrix-product", {"W_grad": "[[0.5, -1], [0.5, -1]]", "x_grad": "[[4], [6]]"}),
        ("extra-relu-layer", {"w_grad": "[1, 0, 0]", "b_grad": "[1, 0, 0]"}),
    ]
    for slug, answers in cases:
        parts = grade(slug, **answers)
        assert all(part["correct"] for part in parts.values()), (slug, parts)


@pytest.mark.parametrize(
    ("slug", "answers", "kind", "path"),
    [
        ("extra-shared-subexpression", {"x_grad": "8"}, "missing_path", ["x", "mul", "mul", "add", "z"]),
        ("extra-shared-subexpression", {"x_grad": "6"}, "missing_path", ["x", "mul", "pow", "add", "z"]),
        ("extra-vector-output", {"x_grad": "[7, -5, 13]"}, "seed_vector", None),
        ("extra-vector-output", {"x_grad": "3.5"}, "shape", None),
        ("extra-relu-layer", {"w_grad": "[1, 2, -1]"}, "dead_branch", ["w", "mul", "add", "relu", "sum", "L"]),
        ("extra-matrix-product", {"x_grad": "[[3], [7]]"}, "wrong_local_derivative", None),  # W, not Wᵀ
    ],
)
def test_wrong_answers_get_path_diagnoses(
    slug: str, answers: dict[str, str], kind: str, path: list[str] | None
) -> None:
    [part] = grade(slug, **answers).values()
    assert not part["correct"] and part["diagnosis"]["kind"] == kind
    if path:
        assert path in part["diagnosis"]["paths"]


def test_a_wrong_local_derivative_names_the_edge() -> None:
    sigmoid_as_s = math.exp(Y) * math.sin(X) + (1 - math.tanh(X * Y) ** 2) * X + sigmoid(Y)
    tanh_without_square = math.cos(X) * math.exp(Y) + (1 - math.tanh(X * Y)) * Y
    parts = grade("extra-smooth-functions", y_grad=repr(sigmoid_as_s), x_grad=repr(tanh_without_square))
    assert parts["y.grad"]["diagnosis"]["kind"] == "wrong_local_derivative"
    assert ["y", "sigmoid", "add", "z"] in parts["y.grad"]["diagnosis"]["paths"]
    assert "σ(y)·(1 - σ(y))" in parts["y.grad"]["diagnosis"]["message"]
    assert parts["x.grad"]["diagnosis"]["kind"] == "wrong_local_derivative"
    assert "tanh²" in parts["x.grad"]["diagnosis"]["message"]


def test_a_big_graph_is_capped_and_says_so(tmp_path: Path) -> None:
    out = io.StringIO()
    call_command("load_assignments", str(EXTRA / "big-graph.toml"), stdout=out)
    assert "note: only the first 64 paths of x were enumerated" in out.getvalue()
    assert "do not add up" not in out.getvalue()  # the cap explains the gap
    [part] = grade("extra-big-graph", x_grad="1").values()
    assert part["diagnosis"]["kind"] == "unknown" and "the 64 paths from x, such as" in part["diagnosis"]["message"]
    assert len(part["diagnosis"]["message"]) < 2000


def test_a_modules_parameters_are_part_keys() -> None:
    """`layer.weight.grad` is a documented part key: the loader takes it, the engine reads it
    through the module's attributes, and a forgotten x of W·x is named on the layer's edge."""
    slope = 1 - math.tanh(0.5 * 2 - 1 * 1 + 0.25) ** 2
    parts = grade("extra-module-layer", layer_weight_grad=f"[[{2 * slope}, {slope}]]", layer_bias_grad=f"[{slope}]")
    assert parts["layer.weight.grad"]["correct"] and parts["layer.bias.grad"]["correct"], parts
    wrong = grade("extra-module-layer", layer_weight_grad=f"[[{slope}, {slope}]]")["layer.weight.grad"]
    assert not wrong["correct"]
    assert wrong["diagnosis"]["kind"] == "wrong_local_derivative", wrong["diagnosis"]
