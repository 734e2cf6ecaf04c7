"""Formulas and PyTorch code, graded through `manage.py grade` with the real sandbox."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from grader.models import Submission

pytestmark = pytest.mark.django_db


def grade(slug: str, *args: str) -> dict[str, dict[str, Any]]:
    out = io.StringIO()
    call_command("grade", slug, *args, "--json", stdout=out)
    return {part["part"]: part for part in json.loads(out.getvalue())["parts"]}


def grade_code(tmp_path: Path, slug: str, part: str, source: str) -> dict[str, Any]:
    path = tmp_path / "answer.py"
    path.write_text(source)
    return grade(slug, "--code-file", f"{part}={path}")[part]


def kind_of(result: dict[str, Any]) -> str:
    kind: str = result["diagnosis"]["kind"]
    return kind


GRAD_Z = {
    "forgets the x·y path": ("def grad_z(x, y):\n    return 2*x, x\n", "missing_path", ["x", "mul", "add", "z"]),
    "flips a sign": ("def grad_z(x, y):\n    return y - 2*x, x\n", "sign_error", ["x", "pow", "add", "z"]),
    "multiplies the paths": ("def grad_z(x, y):\n    return y * 2*x, x\n", "product_of_paths", None),
}


@pytest.mark.parametrize("case", list(GRAD_Z))
def test_realistic_wrong_grad_z_names_the_path(tmp_path: Path, case: str) -> None:
    source, kind, path = GRAD_Z[case]
    result = grade_code(tmp_path, "visual-walkthrough", "grad_z", source)
    assert not result["correct"] and kind_of(result) == kind
    if path:
        assert path in result["diagnosis"]["paths"]
    message = result["diagnosis"]["message"]  # the student wrote grad_z's return values, not a .grad
    assert "(your dz_dy is right.)" in message and "x.grad" not in message and "y.grad" not in message
    assert result["score"] == 1.0 and result["max_score"] == 2.0  # one of the two gradients earns its share


@pytest.mark.parametrize(
    "source",
    [
        "def grad_z(x, y):\n    return y + 2*x, x\n",
        "import numpy as np\n\ndef grad_z(a, b):\n    return float(np.add(b, 2 * a)), a\n",
        "import math\n\ndef grad_z(x, y):\n    return math.fsum([y, 2 * x]), x\n",
    ],
    ids=["closed form", "numpy and other names", "math"],
)
def test_a_correct_solution_written_differently_gets_full_marks(tmp_path: Path, source: str) -> None:
    result = grade_code(tmp_path, "visual-walkthrough", "grad_z", source)
    assert result["correct"] and result["score"] == result["max_score"] == 2


def test_calling_backward_in_the_by_hand_part_earns_nothing(tmp_path: Path) -> None:
    """grad_z asks for the backward pass by hand, so the catalog sets forbid_autograd."""
    source = ("import torch\n\ndef grad_z(x, y):\n    x = torch.tensor(x, requires_grad=True)\n"
              "    y = torch.tensor(y, requires_grad=True)\n    (x * y + x**2).backward()\n"
              "    return x.grad.item(), y.grad.item()\n")
    result = grade_code(tmp_path, "visual-walkthrough", "grad_z", source)
    assert not result["correct"] and result["score"] == 0
    assert "by hand: torch is not available" in result["diagnosis"]["message"]


def test_counting_the_detached_path_is_an_extra_path(tmp_path: Path) -> None:
    source = "x = torch.tensor([x0], requires_grad=True)\na = x**2\nb = a\nz = b * x\nz.backward()\n"
    result = grade_code(tmp_path, "detach", "frozen", source)
    assert kind_of(result) == "extra_path"
    assert ["x", "pow", "detach", "mul", "z"] in result["diagnosis"]["paths"]


def test_a_loop_that_zeroes_between_calls_is_an_accumulation_mistake(tmp_path: Path) -> None:
    source = ("x = torch.tensor([x0], requires_grad=True)\ny = x**2\nfor step in range(2):\n"
              "    if x.grad is not None:\n        x.grad.zero_()\n    y.backward(retain_graph=True)\n")
    result = grade_code(tmp_path, "accumulation", "program", source)
    assert kind_of(result) == "accumulation"  # said of the student's own zero_(), traced in the sandbox
    assert result["diagnosis"]["message"].startswith(
        "Line 5 (`x.grad.zero_()`) zeroes x.grad between the backward() calls on line 6, in a loop")


def test_a_grad_assigned_by_hand_earns_nothing_even_when_right(tmp_path: Path) -> None:
    source = "x = torch.tensor([x0], requires_grad=True)\ny = x**2\ny.backward()\nx.grad *= 2\n"
    result = grade_code(tmp_path, "accumulation", "program", source)
    assert (result["correct"], result["score"], kind_of(result)) == (False, 0.0, "not_autograd")
    assert "x.grad was assigned by hand on line 4 (`x.grad *= 2`)" in result["diagnosis"]["message"]


def test_a_clone_is_not_described_as_a_detach(tmp_path: Path) -> None:
    source = "x = torch.tensor([x0], requires_grad=True)\na = x**2\nb = a.clone()\nz = b * x\nz.backward()\n"
    message = grade_code(tmp_path, "detach", "frozen", source)["diagnosis"]["message"]
    assert message.startswith("Line 3 (`b = a.clone()`): clone() copies a but keeps its graph")
    assert "runs through detach()" not in message


def test_a_missing_seed_reports_the_error_on_the_students_line(tmp_path: Path) -> None:
    source = "x = torch.tensor(xs, requires_grad=True)\ny = x**2\ny.backward()\n"
    result = grade_code(tmp_path, "non-scalar", "seeded", source)
    assert kind_of(result) == "code_error"
    assert "line 3" in result["diagnosis"]["message"] and "scalar outputs" in result["diagnosis"]["message"]


def test_a_program_ignoring_the_given_seed_is_caught(tmp_path: Path) -> None:
    """the seeded part varies `seed` between points (config.vary), so the default seed of
    ones passes only at the statement's point, not at the others."""
    source = "x = torch.tensor(xs, requires_grad=True)\ny = x**2\ny.backward(torch.ones_like(y))\n"
    assert not grade_code(tmp_path, "non-scalar", "seeded", source)["correct"]
    using_seed = "x = torch.tensor(xs, requires_grad=True)\ny = x**2\ny.backward(torch.tensor(seed))\n"
    assert grade_code(tmp_path, "non-scalar", "seeded", using_seed)["correct"]


def test_the_fix_mode_accepts_a_repaired_program(tmp_path: Path) -> None:
    source = ("x = torch.tensor([x0])\nw = torch.tensor([0.0], requires_grad=True)\nwith torch.no_grad():\n"
              "    w += w0\nz = w * x\nz.backward()\n")
    assert grade_code(tmp_path, "untracked-leaf", "fix", source)["correct"]


def test_code_that_never_defines_the_function_is_told_so(tmp_path: Path) -> None:
    result = grade_code(tmp_path, "visual-walkthrough", "grad_z", "def gradz(x, y):\n    return 1, 2\n")
    assert kind_of(result) == "code_error" and "grad_z" in result["diagnosis"]["message"]


def test_an_endless_loop_is_stopped_and_reported(tmp_path: Path) -> None:
    result = grade_code(tmp_path, "negative-gradient", "grad_z", "def grad_z(x):\n    while True:\n        pass\n")
    assert kind_of(result) == "code_error" and "limit" in result["diagnosis"]["message"]


@pytest.mark.parametrize(
    ("slug", "answer", "kind"),
    [
        ("visual-walkthrough", "dz_dx=y + 2x", "correct"),
        ("visual-walkthrough", "dz_dx=2*x + y", "correct"),
        ("visual-walkthrough", "dz_dx=2x", "missing_path"),
        ("visual-walkthrough", "dz_dx=y - 2x", "sign_error"),
        ("positive-gradient", "dz_dx=2x+3", "correct"),
        ("negative-gradient", "dz_dx=4 - 3x^2", "correct"),
        ("negative-gradient", "dz_dx=4 - 3x", "wrong_local_derivative"),
        ("dead-relu", "dy_dx=1", "dead_branch"),
    ],
)
def test_formulas_are_diagnosed_at_every_point(slug: str, answer: str, kind: str) -> None:
    key = answer.split("=")[0]
    assert kind_of(grade(slug, answer)[key]) == kind


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["dz_dx=2*q"], "q"),
        (["dz_dx=__import__('os')"], "Quotes"),
        (["dz_dx=" + "x+" * 500_000 + "x"], "longer than"),
        (["dz_dx=" + "x+" * 5_000 + "x"], "500"),
        (["dz_dx=" + "(" * 5000 + "x" + ")" * 5000], "dz_dx"),
        (["grad_z=def f(): pass"], "code"),
    ],
)
def test_unreadable_formulas_exit_2_and_store_nothing(args: list[str], message: str) -> None:
    with pytest.raises(CommandError) as caught:
        call_command("grade", "visual-walkthrough", *args, stdout=io.StringIO())
    assert caught.value.returncode == 2 and message in str(caught.value)
    assert Submission.objects.count() == 0


def test_code_with_a_syntax_error_exits_2_with_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("def grad_z(x, y):\n    return (y + 2*x, x\n")
    with pytest.raises(CommandError) as caught:
        call_command("grade", "visual-walkthrough", "--code-file", f"grad_z={path}", stdout=io.StringIO())
    assert caught.value.returncode == 2 and "line 2" in str(caught.value)


# Building this as a SymPy expression kept the web request busy for minutes on main (18 s at 65
# characters, over 60 s with one more tan(e^…) level): SymPy's assumption system, run while the
# expression is constructed, multiplies its work by ~4 with every level.
HOSTILE_FORMULA = "1/sinh(tan(e^tan(e^tan(e^tan(e^tan(e^tan(e^(x-log(y)*tan(2)))))))))^-100"


def test_validating_a_hostile_formula_is_bounded_work_without_sympy() -> None:
    import subprocess
    import sys

    from chainrule.answers.formula_parse import formula_value, parse_expression

    formula = parse_expression(HOSTILE_FORMULA, variables=["x", "y"])  # would spin for minutes in SymPy
    assert formula_value(formula, {"x": 2.0, "y": 3.0}) is not None
    check = ("import sys\nfrom chainrule.answers.formula_parse import parse_expression\n"
             f"parse_expression({HOSTILE_FORMULA!r}, variables=['x', 'y'])\nprint('sympy' in sys.modules)\n")
    shown = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60,
                           cwd=Path(__file__).resolve().parent.parent)
    assert shown.stdout.strip() == "False", shown.stderr  # the web's validation never loads SymPy


def test_a_formula_too_complex_for_sympy_is_feedback_from_a_limited_sandbox_job(sandbox_socket: str) -> None:
    from chainrule.answers.formula_grading import grade_symbolic
    from chainrule.tests.point_analyses import seed_analyses, seed_points
    from grading.formula_check import formula_equivalence_check

    points = [point for point in seed_points("visual-walkthrough") if point["y0"] > 0]
    # Right at every point (the added term is 0), but SymPy must build the hostile term to see that.
    answer = "y + 2x + 0*" + HOSTILE_FORMULA[2:]
    diagnosis = grade_symbolic(text=answer, variables={"x": "x0", "y": "y0"},
                               analyses=seed_analyses("visual-walkthrough", points), points=points, part="x.grad",
                               reference_formula="y + 2*x", rel_tol=1e-4, abs_tol=1e-6,
                               equivalence=formula_equivalence_check)
    assert (diagnosis.correct, diagnosis.kind, diagnosis.detail["reason"]) == (False, "unknown", "too_complex")
    assert "too complex to check" in diagnosis.message


def test_a_hostile_formula_through_the_web_form_is_answered_at_once(student: Any) -> None:
    import threading

    from tests.clients import logged_in

    client, replies = logged_in(student), []
    thread = threading.Thread(target=lambda: replies.append(client.post(
        "/assignments/visual-walkthrough/", {"dz_dx": HOSTILE_FORMULA})), daemon=True)
    thread.start()
    thread.join(timeout=20)  # on main this request spins in SymPy for minutes
    assert replies and replies[0].status_code in (200, 302, 400), replies


# Each attempt gets hold of torch its own way (bound to T) and then lets autograd's engine answer
# through torch internals, past any patched backward(): right values, so only a job without torch
# makes these fail.
_WITH_AUTOGRAD = ("\ndef grad_z(x, y):\n    x = T.tensor(x, requires_grad=True)\n"
                  "    y = T.tensor(y, requires_grad=True)\n"
                  "    z = x * y + x**2\n    T.autograd.Variable._execution_engine.run_backward(\n"
                  "        (z,), (T.ones(()),), False, False, (), True, True)\n"
                  "    return x.grad.item(), y.grad.item()\n")
BY_HAND_BYPASSES = {
    "backward()": "import torch as T\n" + _WITH_AUTOGRAD,
    "inside the function": _WITH_AUTOGRAD.replace("    x = T", "    import torch as T\n    x = T"),
    "importlib": "import importlib\nT = importlib.import_module('torch')\n" + _WITH_AUTOGRAD,
    "sys.modules": "import sys\nsys.modules.pop('torch', None)\nimport torch as T\n" + _WITH_AUTOGRAD,
    "sys.path": ("import sys, glob\nsys.path += glob.glob('/**/site-packages', recursive=True)\n"
                 "sys.modules.pop('torch', None)\nimport torch as T\n" + _WITH_AUTOGRAD),
    "__import__ via builtins": "T = __builtins__.__import__('torch')\n" + _WITH_AUTOGRAD,
    "torch's library": ("import ctypes, glob\nctypes.CDLL(glob.glob('/**/libtorch_cpu.so', recursive=True)[0])\n"
                        "\ndef grad_z(x, y):\n    return y + 2 * x, x\n"),
}


@pytest.mark.parametrize("attempt", list(BY_HAND_BYPASSES))
def test_a_by_hand_part_runs_where_torch_does_not_exist(tmp_path: Path, attempt: str) -> None:
    """visual-walkthrough's grad_z is "by hand": .backward() once passed, and the refusal could be
    bypassed through torch internals. Now the job's process has no torch to reach at all."""
    result = grade_code(tmp_path, "visual-walkthrough", "grad_z", BY_HAND_BYPASSES[attempt])
    assert not result["correct"] and kind_of(result) == "code_error", result
    assert result["score"] == 0


def test_every_code_part_of_a_submission_runs_in_one_sandbox_job(sandbox_socket: str) -> None:
    """One job for all parts; a part whose code ends the process costs only that part."""
    from chainrule.code.harness import harness_source
    from sandbox import Limits, run_job

    point = [{"x0": 2.0, "y0": 3.0}]
    common = {"mode": "function", "points": point, "function": "grad_z", "args": ["x0", "y0"], "returns": 2}
    parts = [{**common, "source": "import os\nos._exit(0)\n"},
             {**common, "source": "def grad_z(x, y):\n    return y + 2 * x, x\n"}]
    result = run_job(source=harness_source(), input={"parts": parts}, limits=Limits(), socket_path=sandbox_socket)
    assert result.status == "ok" and isinstance(result.result, dict), result
    first, second = result.result["parts"]
    assert first["ok"] is False and "ended the grading process" in first["error"]
    assert second["ok"] is True and second["points"][0]["values"] == {"0": 7.0, "1": 2.0}


def test_two_wrong_return_values_are_each_named_once() -> None:
    """'your dL_dw: Your dL_dw is …' named each value twice in one paragraph."""
    from chainrule import Diagnosis
    from grading.code_parts import combined_diagnosis

    wrong = {key: Diagnosis(key, False, "unknown", [], f"Your {name} is off.", detail={"subject": name})
             for key, name in (("w.grad", "dL_dw"), ("b.grad", "dL_db"))}
    assert combined_diagnosis(key="backward", diagnoses=wrong).message == "Your dL_dw is off. Your dL_db is off."
    right = {key: Diagnosis(key, True, "correct", [], "ok", detail={"subject": name})
             for key, name in (("w.grad", "dL_dw"), ("b.grad", "dL_db"))}
    assert combined_diagnosis(key="backward", diagnoses=right).message == (
        "Correct: your dL_dw and your dL_db both match the gradients autograd computes.")


def test_a_part_reading_several_gradients_keeps_the_lines_of_each_wrong_ones_cause() -> None:
    """A fix read for W.grad, a.grad and b.grad lost its `lines`: the combined diagnosis kept only components."""
    from chainrule import Diagnosis
    from chainrule.result import cause_lines
    from grading.code_parts import combined_diagnosis

    diagnoses = {"W.grad": Diagnosis("W.grad", False, "missing_path", [], "cut", detail={"code": {"line": 5}}),
                 "a.grad": Diagnosis("a.grad", False, "missing_path", [], "cut", detail={"cause_lines": [5, 7]}),
                 "b.grad": Diagnosis("b.grad", True, "correct", [], "ok")}
    assert cause_lines(combined_diagnosis(key="fix", diagnoses=diagnoses).detail) == [5, 7]


def test_a_part_of_several_gradients_carries_the_lines_of_each_wrong_one() -> None:
    """A program part that reads x.grad and g.grad lost the student's lines in its one diagnosis."""
    from chainrule import Diagnosis
    from chainrule.result import diagnosis_document
    from grading.code_parts import combined_diagnosis

    diagnoses = {"x.grad": Diagnosis("x.grad", False, "missing_path", [], "cut", detail={"code": {"line": 4}}),
                 "g.grad": Diagnosis("g.grad", False, "unknown", [], "off", detail={"cause_lines": [2, 4]}),
                 "b.grad": Diagnosis("b.grad", True, "correct", [], "ok", detail={"cause_lines": [9]})}
    assert diagnosis_document(combined_diagnosis(key="program", diagnoses=diagnoses))["lines"] == [2, 4]
