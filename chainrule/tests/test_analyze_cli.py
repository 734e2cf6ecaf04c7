from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from chainrule import Analysis
from chainrule.analysis.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run_cli(request: object) -> tuple[dict[str, object], int]:
    stdout = io.StringIO()
    status = main(io.StringIO(json.dumps(request)), stdout)
    lines = stdout.getvalue().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0]), status


def test_it_prints_one_json_analysis_even_when_the_program_prints() -> None:
    program = "x = torch.tensor([x0], requires_grad=True)\nz = x**2 + 3*x\nprint('noise')\nz.backward()\n"
    reply, status = run_cli({"program": program, "params": {"x0": 2.0}, "parts": ["x.grad"]})
    assert status == 0 and reply["ok"] is True
    analysis = Analysis.from_json(reply["analysis"])  # type: ignore[arg-type]
    assert analysis.parts["x.grad"].value == [7.0]


def test_it_reports_a_failing_program_with_its_line_number() -> None:
    reply, status = run_cli({"program": "x = 1\ny = undefined_name + x\n", "params": {}, "parts": ["y"]})
    assert status == 1 and reply == {
        "ok": False, "error": "NameError: name 'undefined_name' is not defined (program line 2)"}


def test_it_reports_a_syntax_error_with_its_line_number() -> None:
    reply, _ = run_cli({"program": "x = 1\ny = (\n", "params": {}, "parts": ["x"]})
    assert reply["ok"] is False and "SyntaxError" in str(reply["error"]) and "program line 2" in str(reply["error"])


def test_it_reports_a_torch_error_such_as_a_missing_seed() -> None:
    program = "x = torch.tensor([1.0, 2.0], requires_grad=True)\ny = x**2\ny.backward()\n"
    reply, _ = run_cli({"program": program, "params": {}, "parts": ["x.grad"]})
    assert "only for scalar outputs (program line 3)" in str(reply["error"])


def test_it_rejects_malformed_requests() -> None:
    assert run_cli({"program": 3, "parts": []})[0]["ok"] is False
    assert run_cli({"program": "x = 1", "parts": ["x.__class__"]})[0]["error"] == (
        "AnalysisError: part 'x.__class__' is not of the form name, name.attribute or name.grad")
    out = io.StringIO()
    assert main(io.StringIO("{not json"), out) == 1
    assert json.loads(out.getvalue())["ok"] is False


def test_it_runs_as_a_module() -> None:
    request = json.dumps({"program": "w = torch.tensor([3.0], requires_grad=True)\n(w * 2).backward()\n",
                          "parts": ["w.grad"]})
    completed = subprocess.run([sys.executable, "-m", "chainrule.analysis.cli"], input=request, capture_output=True,
                               text=True, cwd=ROOT, timeout=60, check=False)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["analysis"]["parts"]["w.grad"]["value"] == [2.0]


def test_it_analyses_every_evaluation_point_and_keeps_failing_points_apart() -> None:
    program = "x = torch.tensor([x0], requires_grad=True)\nz = torch.log(x) if x0 > 0 else undefined\nz.backward()\n"
    reply, status = run_cli({"program": program, "parts": ["x.grad"], "points": [{"x0": 2.0}, {"x0": -1.0}]})
    assert status == 0 and reply["ok"] is True
    analyses, errors = reply["analyses"], reply["errors"]
    assert isinstance(analyses, list) and isinstance(errors, list)
    assert Analysis.from_json(analyses[0]).parts["x.grad"].value == [0.5]
    assert analyses[1] is None and "NameError" in str(errors[1])


def test_it_rejects_malformed_points() -> None:
    assert run_cli({"program": "x = 1", "parts": ["x"], "points": []})[0]["ok"] is False
    assert run_cli({"program": "x = 1", "parts": ["x"], "points": [3]})[0]["ok"] is False
