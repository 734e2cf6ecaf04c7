"""One edge's wrong local derivative on any op, found by
re-running backward with that node's VJP replaced, and told in the student's
terms. Each wrong answer is computed here from the mistake, by hand."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from chainrule import analyze_program
from chainrule.result import diagnosis_document
from chainrule.tests.program_diagnosis import diagnose

ROOT = Path(__file__).resolve().parents[2]


def test_multiple_paths_4_is_x_times_x_counted_once() -> None:
    program = "x = torch.tensor([x0], requires_grad=True)\nz = x*x + x\nz.backward()\n"
    diagnosis = diagnose(program, {"x0": 3.0}, "x.grad", 4.0)  # d(x·x)/dx taken as x = 3, plus 1
    assert diagnosis.kind == "wrong_local_derivative" and diagnosis.detail["edge"] == ["x", "mul"]
    assert (diagnosis.detail["used"], diagnosis.detail["right"]) == ("x", "2·x")
    assert "x = 3" in diagnosis.message and "2·x = 6" in diagnosis.message and "x0" not in diagnosis.message
    assert diagnosis_document(diagnosis) | {"message": ""} == {
        "kind": "wrong_local_derivative", "paths": [["x", "mul", "add", "z"]], "message": "",
        "edge": ["x", "mul"], "used": "x", "right": "2·x"}


def test_linear_layer_ones_is_the_x_of_w_times_x_dropped() -> None:
    program = ("x = torch.tensor(xs)\nw = torch.tensor(ws, requires_grad=True)\nb = torch.tensor([b0], "
               "requires_grad=True)\nz = (w * x).sum() + b\nz.backward()\n")
    diagnosis = diagnose(program, {"xs": [1.0, 2.0], "ws": [0.5, -0.3], "b0": 0.1}, "w.grad", [1.0, 1.0])
    assert diagnosis.kind == "wrong_local_derivative" and diagnosis.detail["edge"] == ["w", "mul"]
    assert (diagnosis.detail["used"], diagnosis.detail["right"]) == ("1", "x")
    assert "x = [1, 2]" in diagnosis.message and "chain rule" in diagnosis.message
    assert "parallel" not in diagnosis.message  # one path from w: no parallel-path rule


TANH_MEAN = "x = torch.tensor(xs, requires_grad=True)\nh = torch.tanh(x)\nL = h.mean()\nL.backward()\n"
XS = [0.5, -1.0, 2.0]


def test_the_1_over_n_of_mean_forgotten() -> None:
    answer = [1 - math.tanh(v) ** 2 for v in XS]  # no 1/3
    diagnosis = diagnose(TANH_MEAN, {"xs": XS}, "x.grad", answer)
    assert (diagnosis.kind, diagnosis.detail["edge"], diagnosis.detail["rule"]) == (
        "wrong_local_derivative", ["tanh", "mean"], "mean_normaliser")
    assert "mean divides by N" in diagnosis.message and "1/3" in diagnosis.message


def test_tanh_prime_as_one_plus_tanh_squared() -> None:
    answer = [(1 + math.tanh(v) ** 2) / 3 for v in XS]
    diagnosis = diagnose(TANH_MEAN, {"xs": XS}, "x.grad", answer)
    assert (diagnosis.kind, diagnosis.detail["edge"], diagnosis.detail["used"]) == (
        "wrong_local_derivative", ["x", "tanh"], "1 + tanh²(x)")


def test_x_at_w_with_w_instead_of_w_transposed() -> None:
    program = ("x = torch.tensor(xs, requires_grad=True)\nW = torch.tensor(ws)\nC = torch.tensor(cs)\n"
               "L = ((x @ W) * C).sum()\nL.backward()\n")
    xs, ws, cs = [[1.0, 2.0], [3.0, -1.0]], [[0.5, -2.0], [1.5, 1.0]], [[1.0, 2.0], [-1.0, 0.5]]
    answer = [[sum(cs[i][k] * ws[k][j] for k in range(2)) for j in range(2)] for i in range(2)]  # C @ W
    diagnosis = diagnose(program, {"xs": xs, "ws": ws, "cs": cs}, "x.grad", answer)
    assert (diagnosis.kind, diagnosis.detail["edge"], diagnosis.detail["rule"]) == (
        "wrong_local_derivative", ["x", "mm"], "matmul_no_transpose")
    assert "grad @ Wᵀ" in diagnosis.message and "shapes tell you which side to transpose" in diagnosis.message


def test_w_at_h_with_w_forgotten_is_told_as_a_factor_left_out_not_a_transpose() -> None:
    program = ("b = torch.tensor(bs, requires_grad=True)\nW = torch.tensor(ws)\nh = b * 2\n"
               "y = W @ h\nL = y.sum()\nL.backward()\n")
    ws = [[0.5, -2.0], [1.5, 1.0]]
    diagnosis = diagnose(program, {"bs": [1.0, 3.0], "ws": ws}, "b.grad", [4.0, 4.0])  # as if W were all ones
    assert (diagnosis.kind, diagnosis.detail["rule"]) == ("wrong_local_derivative", "matmul_operand_one")
    assert "the other operand" in diagnosis.message and "transpose" not in diagnosis.message.split("The rule")[-1]


def test_logsumexp_without_its_normaliser() -> None:
    program = "z = torch.tensor(zs, requires_grad=True)\nL = torch.logsumexp(z, 0)\nL.backward()\n"
    zs = [1.0, 2.0, 0.5]
    diagnosis = diagnose(program, {"zs": zs}, "z.grad", [math.exp(v) for v in zs])
    assert (diagnosis.kind, diagnosis.detail["edge"]) == ("wrong_local_derivative", ["z", "logsumexp"])


def test_a_broadcast_bias_averaged_over_the_batch() -> None:
    program = ("X = torch.tensor(xs)\nb = torch.tensor(bs, requires_grad=True)\nL = ((X + b) ** 2).sum()\n"
               "L.backward()\n")
    xs, bs = [[1.0, 2.0], [0.5, -1.0], [2.0, 0.0]], [0.5, -0.5]
    summed = [sum(2 * (row[j] + bs[j]) for row in xs) for j in range(2)]
    diagnosis = diagnose(program, {"xs": xs, "bs": bs}, "b.grad", [value / 3 for value in summed])
    assert (diagnosis.kind, diagnosis.detail["edge"], diagnosis.detail["rule"]) == (
        "wrong_local_derivative", ["b", "add"], "broadcast_averaged")


def test_mse_loss_taken_as_a_sum() -> None:
    program = ("p = torch.tensor(ps, requires_grad=True)\nt = torch.tensor(ts)\n"
               "L = torch.nn.functional.mse_loss(p, t)\nL.backward()\n")
    ps, ts = [1.0, 2.0, 4.0], [0.5, 2.5, 1.0]
    diagnosis = diagnose(program, {"ps": ps, "ts": ts}, "p.grad", [2 * (a - b) for a, b in zip(ps, ts, strict=True)])
    assert (diagnosis.kind, diagnosis.detail["edge"]) == ("wrong_local_derivative", ["p", "mse_loss"])


@pytest.mark.parametrize(("answer", "rule"), [
    (2 * math.log(2.0) * math.log(2.0), "log_itself"),  # d ln x taken as ln x
    (2 * math.log(2.0) * 2.0, "log_argument"),  # d ln x taken as x
])
def test_d_log_x_taken_as_log_x_or_x(answer: float, rule: str) -> None:
    program = "x = torch.tensor(x0, requires_grad=True)\nL = torch.log(x) ** 2\nL.backward()\n"
    diagnosis = diagnose(program, {"x0": 2.0}, "x.grad", answer)
    assert (diagnosis.kind, diagnosis.detail["edge"], diagnosis.detail["rule"]) == (
        "wrong_local_derivative", ["x", "log"], rule)


def test_the_quotient_rules_sign() -> None:
    program = ("a = torch.tensor(a0, requires_grad=True)\nb = torch.tensor(b0, requires_grad=True)\n"
               "z = a / b\nz.backward()\n")
    diagnosis = diagnose(program, {"a0": 3.0, "b0": 2.0}, "b.grad", 3.0 / 4.0)  # +a/b² instead of -a/b²
    assert (diagnosis.kind, diagnosis.detail["edge"], diagnosis.detail["rule"]) == (
        "wrong_local_derivative", ["b", "div"], "div_quotient_sign")


def test_the_inner_derivative_forgotten() -> None:
    program = "x = torch.tensor(x0, requires_grad=True)\nz = torch.sin(x ** 2)\nz.backward()\n"
    diagnosis = diagnose(program, {"x0": 1.5}, "x.grad", math.cos(1.5**2))  # d(x²)/dx taken as 1
    assert (diagnosis.kind, diagnosis.detail["edge"], diagnosis.detail["used"]) == (
        "wrong_local_derivative", ["x", "pow"], "1")


def test_a_generic_sign_flip_on_the_only_path_stays_a_sign_error() -> None:
    program = "x = torch.tensor(x0, requires_grad=True)\nz = x ** 3\nz.backward()\n"
    diagnosis = diagnose(program, {"x0": 2.0}, "x.grad", -12.0)
    assert diagnosis.kind == "sign_error"  # the contract: no catalogued op mistake flips this sign


def test_a_catalogued_sign_flip_names_the_edge() -> None:
    program = "x = torch.tensor(x0, requires_grad=True)\nz = 3 * torch.cos(x)\nz.backward()\n"
    diagnosis = diagnose(program, {"x0": 0.7}, "x.grad", 3 * math.sin(0.7))  # d cos = sin
    assert (diagnosis.kind, diagnosis.detail["edge"], diagnosis.detail["used"]) == (
        "wrong_local_derivative", ["x", "cos"], "sin(x)")


def test_the_analysis_states_each_edges_local_derivative() -> None:
    program = ("x = torch.tensor(x0, requires_grad=True)\ny = torch.tensor(y0, requires_grad=True)\n"
               "a = x * y\na.backward()\n")
    analysis = analyze_program(program=program, params={"x0": 2.0, "y0": 3.0}, parts=["x.grad"])
    into_mul = {item["source"]: item for item in analysis.local_derivatives}
    assert (into_mul["leaf:x"]["formula"], into_mul["leaf:x"]["value"]) == ("y", 3.0)
    assert (into_mul["leaf:y"]["formula"], into_mul["leaf:y"]["value"]) == ("x", 2.0)


def test_unknown_points_to_the_edge_that_comes_closest() -> None:
    answer = [(1 - math.tanh(v) ** 2) * 1.05 for v in XS]  # the 1/N forgotten, and 5 % off besides
    diagnosis = diagnose(TANH_MEAN, {"xs": XS}, "x.grad", answer)
    assert diagnosis.kind == "unknown" and diagnosis.detail["closest_edge"] == ["tanh", "mean"]
    assert "mean with respect to h (the edge tanh → mean)" in diagnosis.message
    assert "A guess, not a diagnosis" in diagnosis.message


def test_a_formula_part_speaks_of_your_formula() -> None:
    from chainrule.diagnosis.across_points import diagnose_points
    from chainrule.tests.point_analyses import seed_analyses, seed_points

    points = seed_points("visual-walkthrough")
    analyses = seed_analyses("visual-walkthrough", points)
    answers = [2 * point["x0"] for point in points]  # the x·y path left out
    diagnosis = diagnose_points(analyses=analyses, part="x.grad", answers=answers, rel_tol=1e-4, abs_tol=1e-6,
                                subject="formula")
    assert diagnosis.kind == "missing_path" and diagnosis.message.startswith("Your formula leaves out")
    assert "x.grad" not in diagnosis.message


def test_a_numeric_answer_is_diagnosed_without_torch(tmp_path: Path) -> None:
    analysis = analyze_program(program=TANH_MEAN, params={"xs": XS}, parts=["x.grad"])
    answer = [1 - math.tanh(v) ** 2 for v in XS]  # the 1/N forgotten
    stored = tmp_path / "analysis.json"
    stored.write_text(json.dumps(analysis.to_json()))
    script = (f"import sys, json\nsys.modules['torch'] = None\nsys.path.insert(0, {str(ROOT)!r})\n"
              "from chainrule.diagnosis.numeric import diagnose_numeric\nfrom chainrule.model import Analysis\n"
              f"analysis = Analysis.from_json(json.load(open({str(stored)!r})))\n"
              f"print(diagnose_numeric(analysis=analysis, part='x.grad', answer={answer!r})"
              ".detail['rule'])\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "mean_normaliser"


def test_a_batch_mean_divided_by_its_rows_only_is_named() -> None:
    """MSE over a 3×2 batch divided by 3 (the rows) instead of 6: told as 1/N 'counted twice'."""
    program = ("X = torch.tensor(xs)\nb = torch.tensor(bs, requires_grad=True)\nY = X + b\n"
               "L = (Y ** 2).mean()\nL.backward()\n")
    xs, bs = [[1.0, 2.0], [0.5, -1.0], [-1.0, 0.0]], [0.1, -0.3]
    rows = [sum(2 * (xs[i][j] + bs[j]) for i in range(3)) / 3 for j in range(2)]
    diagnosis = diagnose(program, {"xs": xs, "bs": bs}, "b.grad", rows)
    assert (diagnosis.kind, diagnosis.detail["rule"]) == ("wrong_local_derivative", "mean_one_dim")
    assert "1/3 (one over its 3 rows only)" in diagnosis.message and "N = 6, not 3" in diagnosis.message
