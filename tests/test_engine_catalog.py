"""The diagnosis engine on the shipped catalog, through `manage.py grade` with the real sandbox:
the two seed answers that were `unknown`, and the two parts that could be
passed without the skill (item 7)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def grade(slug: str, *args: str) -> dict[str, dict[str, Any]]:
    out = io.StringIO()
    call_command("grade", slug, *args, "--json", stdout=out)
    return {part["part"]: part for part in json.loads(out.getvalue())["parts"]}


def test_multiple_paths_4_names_x_times_x_counted_once() -> None:
    diagnosis = grade("multiple-paths", "x.grad=4")["x.grad"]["diagnosis"]
    assert (diagnosis["kind"], diagnosis["edge"], diagnosis["used"], diagnosis["right"]) == (
        "wrong_local_derivative", ["x", "mul"], "x", "2·x")
    assert "x = 3" in diagnosis["message"] and "x0" not in diagnosis["message"]


def test_linear_layer_ones_names_the_dropped_x() -> None:
    diagnosis = grade("linear-layer", "w.grad=[1, 1]")["w.grad"]["diagnosis"]
    assert (diagnosis["kind"], diagnosis["edge"], diagnosis["used"], diagnosis["right"]) == (
        "wrong_local_derivative", ["w", "mul"], "1", "x")


def test_dead_relu_derivative_zero_is_checked_on_the_live_side_too() -> None:
    assert not grade("dead-relu", "dy_dx=0")["dy_dx"]["correct"]
    assert grade("dead-relu", "dy_dx=step(x)")["dy_dx"]["correct"]


@pytest.mark.parametrize("call", ["y.sum().backward()", "y.backward(torch.ones_like(y))"])
def test_non_scalar_seeded_needs_the_given_seed(tmp_path: Path, call: str) -> None:
    path = tmp_path / "answer.py"
    path.write_text(f"x = torch.tensor(xs, requires_grad=True)\ny = x**2\n{call}\n")
    assert not grade("non-scalar", "--code-file", f"seeded={path}")["seeded"]["correct"]
    path.write_text("x = torch.tensor(xs, requires_grad=True)\ny = x**2\ny.backward(torch.tensor(seed))\n")
    assert grade("non-scalar", "--code-file", f"seeded={path}")["seeded"]["correct"]
