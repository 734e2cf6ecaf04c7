from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chainrule import AnalysisError, ProgramError, analyze_program

ROOT = Path(__file__).resolve().parents[2]
SIMPLE = "x = torch.tensor([x0], requires_grad=True)\nz = x * 3\nz.backward()\n"


def test_it_injects_parameters_as_variables_not_text() -> None:
    analysis = analyze_program(program=SIMPLE, params={"x0": 1.5}, parts=["x.grad", "z", "x0"])
    assert analysis.parts["z"].value == [4.5]
    assert analysis.parts["x0"].value == 1.5 and analysis.parts["x0"].requires_grad is None


@pytest.mark.parametrize(
    ("params", "says"),
    [({"x-0": 1.0}, "identifier"), ({"torch": 1.0}, "reserved"), ({"__x": 1.0}, "reserved"),
     ({"x0": "1; import os"}, "number"), ({"x0": float("nan")}, "finite"), ({"x0": True}, "number")],
)
def test_it_rejects_unusable_parameters(params: dict[str, object], says: str) -> None:
    with pytest.raises(AnalysisError, match=says):
        analyze_program(program=SIMPLE, params=params, parts=["x.grad"])  # type: ignore[arg-type]


@pytest.mark.parametrize("part", ["x.grad()", "x[0]", "__class__", "x._version", "x.grad.__class__", "", "x..grad"])
def test_it_accepts_only_names_and_dotted_grads_as_parts(part: str) -> None:
    with pytest.raises(AnalysisError, match="not of the form"):
        analyze_program(program=SIMPLE, params={"x0": 1.0}, parts=[part])


def test_it_says_which_part_the_program_does_not_define() -> None:
    with pytest.raises(AnalysisError, match="no variable 'q'"):
        analyze_program(program=SIMPLE, params={"x0": 1.0}, parts=["q.grad"])


def test_it_raises_program_error_with_the_line_of_the_failure() -> None:
    with pytest.raises(ProgramError, match=r"ZeroDivisionError: .*\(program line 2\)"):
        analyze_program(program="x = 1\ny = x / 0\n", params={}, parts=["x"])


def test_it_notes_a_tracked_leaf_that_never_reaches_the_output() -> None:
    program = ("x = torch.tensor([1.0], requires_grad=True)\ny = torch.tensor([2.0], requires_grad=True)\n"
               "z = x * 2\nz.backward()\n")
    analysis = analyze_program(program=program, params={}, parts=["y.grad"])
    (hypothesis,) = analysis.hypotheses["y.grad"]
    assert hypothesis.kind == "untracked_leaf" and hypothesis.detail["reason"] == "not_in_graph"


def test_it_imports_the_pure_parts_without_torch() -> None:
    code = ("import sys, chainrule\n"
            "import chainrule.diagnosis.numeric, chainrule.diagnosis.across_points, chainrule.answers.number_parse\n"
            "import chainrule.answers.formula_grading, chainrule.answers.code_grading\n"
            "import chainrule.result, chainrule.picture.graph\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n")
    completed = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                               timeout=60, check=False)
    assert completed.returncode == 0, completed.stderr


def test_it_refuses_a_reference_gradient_that_is_not_finite() -> None:
    program = "x = torch.tensor([0.0], requires_grad=True)\nz = torch.sqrt(x)\nz.backward()\n"
    with pytest.raises(AnalysisError, match="not finite"):
        analyze_program(program=program, params={}, parts=["x.grad"])


def test_it_stores_no_number_for_a_forward_value_json_cannot_hold() -> None:
    import torch

    from chainrule.analysis.graph_build import tensor_value

    assert tensor_value(torch.tensor([float("inf"), 1.0])) is None
    assert tensor_value(torch.zeros(10_000)) is None  # too large for a picture label
    assert tensor_value(torch.tensor([0.1])) == [0.1]
