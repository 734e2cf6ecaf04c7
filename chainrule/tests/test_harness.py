"""The in-sandbox harness, run in-process: student code per point, clear errors
that point at the student's own lines, bounded JSON output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chainrule.code.encoding import MAX_NUMBERS
from chainrule.code.harness import MAX_STDOUT_CHARS, harness_source, run_harness

POINTS = [{"x0": 2.0, "y0": 3.0}, {"x0": 1.5, "y0": -0.5}]
SIGNATURE = "grad_z(x, y) -> (dz_dx, dz_dy)"


def function_job(source: str, **changes: Any) -> dict[str, Any]:
    job = {"mode": "function", "source": source, "function": "grad_z", "args": ["x0", "y0"], "arity": 2,
           "returns": 2, "signature": SIGNATURE, "points": POINTS}
    return {**job, **changes}


def program_job(source: str, reads: list[str]) -> dict[str, Any]:
    return {"mode": "program", "source": source, "reads": reads, "points": POINTS}


def only_error(output: dict[str, Any]) -> str:
    assert output["ok"] is False and output["error"]
    return str(output["error"])


def test_it_calls_the_function_at_every_point() -> None:
    output = run_harness(function_job("def grad_z(x, y):\n    return y + 2*x, x\n"))
    assert output == {"ok": True, "error": None, "stdout": "",
                      "points": [{"values": {"0": 7.0, "1": 2.0}, "error": None},
                                 {"values": {"0": 2.5, "1": 1.5}, "error": None}]}


def test_it_converts_tensors_arrays_and_tuples_to_plain_values() -> None:
    source = "def grad_z(x, y):\n    return torch.tensor([y + 2*x]), np.array([[x, 1.0]])\n"
    values = run_harness(function_job(source))["points"][0]["values"]
    assert values == {"0": [7.0], "1": [[2.0, 1.0]]}


def test_it_passes_tensors_when_asked() -> None:
    source = "def grad_z(x, y):\n    assert isinstance(x, torch.Tensor)\n    return (y + 2*x).item(), x\n"
    assert run_harness(function_job(source, arg_type="tensor"))["ok"] is True


def test_it_reports_a_syntax_error_with_the_line_and_a_caret() -> None:
    error = only_error(run_harness(function_job("def grad_z(x, y):\n    return y +* 2\n")))
    headline, code, caret = error.splitlines()
    assert (headline, code.strip()) == ("SyntaxError: invalid syntax (line 2)", "return y +* 2")
    assert caret.index("^") == code.index("*")


def test_it_says_which_function_is_missing() -> None:
    error = only_error(run_harness(function_job("def grad(x, y):\n    return 1, 2\n")))
    assert error == f"Your code does not define {SIGNATURE}."


def test_it_reports_a_wrong_arity_and_a_non_function() -> None:
    assert "must take 2 arguments" in only_error(run_harness(function_job("def grad_z(x):\n    return 1, 2\n")))
    assert "grad_z is an int" in only_error(run_harness(function_job("grad_z = 3\n")))


def test_it_reports_an_exception_at_the_students_line_only() -> None:
    source = "import math\n\ndef grad_z(x, y):\n    return math.log(x - 2), 1\n"
    output = run_harness(function_job(source))
    assert output["points"][0]["error"] == (
        "Your code raised ValueError: math domain error (line 4: return math.log(x - 2), 1)")
    assert output["points"][1]["error"] is not None and "harness" not in output["points"][1]["error"]


def test_it_reports_wrong_return_counts_types_and_non_finite_numbers() -> None:
    assert "must return 2 values" in only_error(run_harness(function_job("def grad_z(x, y):\n    return 7.0\n")))
    assert "is a str" in only_error(run_harness(function_job("def grad_z(x, y):\n    return 'seven', 2\n")))
    assert "not finite" in only_error(run_harness(function_job("def grad_z(x, y):\n    return x/0.0 if False else"
                                                               " float('inf'), 2\n")))
    huge = "def grad_z(x, y):\n    return torch.zeros(100_000), 1\n"
    assert f"more than {MAX_NUMBERS} numbers" in only_error(run_harness(function_job(huge)))


def test_a_vector_of_two_entries_counts_as_two_return_values() -> None:
    output = run_harness(function_job("def grad_z(x, y):\n    return torch.tensor([y + 2*x, x])\n"))
    assert output["points"][0]["values"] == {"0": 7.0, "1": 2.0}


def test_it_explains_exit_and_bounds_printing() -> None:
    assert "exit()" in only_error(run_harness(function_job("import sys\nsys.exit(3)\n")))
    output = run_harness(function_job("print('x' * 100_000)\ndef grad_z(x, y):\n    return 1, 2\n"))
    assert len(output["stdout"]) == MAX_STDOUT_CHARS


def test_it_can_refuse_autograd_in_by_hand_parts() -> None:
    source = ("def grad_z(x, y):\n    x = torch.tensor(x, requires_grad=True)\n    (x * y).backward()\n"
              "    return x.grad.item(), 1\n")
    assert run_harness(function_job(source))["ok"] is True
    assert only_error(run_harness(function_job(source, forbid_autograd=True))).startswith("This part asks for")
    at_module_level = "x = torch.ones(1, requires_grad=True)\n(x * 2).sum().backward()\n" + source
    assert only_error(run_harness(function_job(at_module_level, forbid_autograd=True))).startswith("This part")


def test_each_point_gets_fresh_parameters() -> None:
    job = {"mode": "function", "source": "def f(xs):\n    xs.append(1.0)\n    return len(xs)\n", "function": "f",
           "args": ["xs"], "points": [{"xs": [1.0]}, {"xs": [1.0]}]}
    assert [point["values"] for point in run_harness(job)["points"]] == [{"0": 2.0}, {"0": 2.0}]


def test_program_mode_reads_grads_and_values_and_says_why_one_is_unreadable() -> None:
    source = "x = torch.tensor([x0], requires_grad=True)\nz = x**2\nz.backward()\n"
    point = run_harness(program_job(source, ["x.grad", "z", "y.grad", "x0.grad"]))["points"][0]
    assert point["values"] == {"x.grad": [4.0], "z": [4.0]}
    assert point["unread"] == {"y.grad": "Your code defines no variable y, so y.grad cannot be read.",
                               "x0.grad": "x0 is a float, so it has no .grad."}
    assert point["raised"] is None and point["error"] is None


def test_program_mode_records_the_exception_type_and_line() -> None:
    source = "x = torch.tensor([x0], requires_grad=True)\nx += 1\ny = x**2\ny.backward()\n"
    point = run_harness(program_job(source, ["x.grad"]))["points"][0]
    assert point["raised"]["type"] == "RuntimeError" and point["raised"]["line"] == 2
    assert point["error"].startswith("Your code raised RuntimeError: a leaf Variable")
    assert "(line 2: x += 1)" in point["error"] and "(line 2: x += 1)" in point["raised"]["message"]


def test_invalid_job_input_is_reported_not_raised() -> None:
    assert "harness input is invalid" in only_error(run_harness({"mode": "function", "source": "", "points": []}))
    assert "harness input is invalid" in only_error(run_harness({"mode": "shell", "source": "", "points": []}))


def test_the_job_source_only_imports_the_harness() -> None:
    """The sandbox's zygotes preload this module: a job compiles three lines, not the harness."""
    assert harness_source().count("\n") == 3 and "from chainrule.code.harness import run_harness" in harness_source()


def test_the_job_source_runs_under_the_sandbox_guest_runner(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    job = function_job("def grad_z(x, y):\n    return y + 2*x, x\n")
    script = ("import json, os, sys\nimport sandbox_guest\nread, write = os.pipe()\n"
              "code = sandbox_guest.run(sys.stdin.read(), sys.argv[1], write, 1 << 20)\n"
              "sys.stdout.write(os.read(read, 1 << 20).decode())\nsys.exit(code)\n")
    path = os.pathsep.join([str(root / "sandbox" / "guest"), str(root)])
    done = subprocess.run([sys.executable, "-c", script, json.dumps(job)], input=harness_source(), text=True,
                          capture_output=True, timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": path})
    assert done.returncode == 0, done.stderr
    here = run_harness(job)  # chainrule is importable here: the same report, with the recorder's trace
    assert all("trace" in point for point in here["points"]) == (job["mode"] == "program")
    untraced = {**here, "points": [{k: v for k, v in point.items() if k != "trace"} for point in here["points"]]}
    assert json.loads(done.stdout) == untraced


def test_a_parent_that_used_torch_threads_does_not_hang_its_child() -> None:
    """OpenMP's pool does not survive fork(): a process that ran a parallel op (a test session, a CLI
    run) used to hang for ever in the child on the student's first big tensor."""
    script = ("import torch\ntorch.set_num_threads(2)\ntorch.ones(4_000_000).mul_(2).sum()\n"
              "from chainrule.code.harness import run_harness\n"
              "from chainrule.tests.test_harness import function_job\n"
              "job = function_job('def grad_z(x, y):\\n    return torch.zeros(200_000).sum() + y + 2*x, x\\n')\n"
              "print(run_harness(job)['points'][0]['values'])\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert "7.0" in done.stdout


@pytest.mark.parametrize("reach", [
    # the C++ engine behind backward(), called directly: it gave full marks on a by-hand part
    "    g = torch.autograd.Variable._execution_engine.run_backward((L,), (torch.ones_like(L),), False, False, (x2,),"
    " False, False)\n",
    "    g = torch._C._ImperativeEngine().run_backward((L,), (torch.ones_like(L),), False, False, (x2,), False,"
    " False)\n",
    # forward mode: a dual number's tangent is the derivative, no backward at all
    "    import torch.autograd.forward_ad as fw\n    with fw.dual_level():\n"
    "        g = (fw.unpack_dual(fw.make_dual(x2.detach(), torch.ones(1)) * y).tangent,)\n",
])
def test_a_by_hand_part_refuses_the_engine_and_forward_mode_too(reach: str) -> None:
    source = ("def grad_z(x, y):\n    x2 = torch.tensor([x], requires_grad=True)\n    L = (x2 * y).sum()\n"
              f"{reach}    return float(g[0]), 1\n")
    assert run_harness(function_job(source))["ok"] is True  # each reach works where autograd is allowed
    assert only_error(run_harness(function_job(source, forbid_autograd=True))).startswith("This part asks for")


def test_bidi_controls_in_an_exception_message_cannot_reorder_the_feedback() -> None:
    """raise ValueError('\u202e…'): the right-to-left override would flip the feedback text after it."""
    source = "def grad_z(x, y):\n    raise ValueError('\\u202etcerroc \\u2066ok')\n"
    message = only_error(run_harness(function_job(source)))
    assert "ValueError" in message and not any(ch in message for ch in "\u202e\u2066")
