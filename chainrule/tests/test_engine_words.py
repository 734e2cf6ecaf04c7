"""After the corpus run: the mistakes the engine still
missed (told as unknown or as another mistake) and the words it still got
wrong. Each wrong answer is computed here from the student's mistake, by hand;
each gave `unknown`, another kind or the words named in its comment before."""

from __future__ import annotations

import math
from typing import Any

from chainrule import Diagnosis, analyze_program
from chainrule.diagnosis.across_points import diagnose_points
from chainrule.result import diagnosis_document
from chainrule.tests.point_analyses import analyses_at
from chainrule.tests.program_diagnosis import diagnose


def mistakes(diagnosis: Diagnosis) -> list[tuple[Any, Any]]:
    found = diagnosis_document(diagnosis)["mistakes"]
    return sorted((m["kind"], m.get("edge") or m.get("paths")) for m in found)


LOG = "x = torch.tensor(x0, requires_grad=True)\nw = torch.tensor(w0, requires_grad=True)\nz = w * torch.log(3 * x)\n"


def test_the_other_factor_of_a_product_differentiated_too() -> None:
    # dz/dw = log(3x); the student differentiated the log as well: 1/(3x). Was unknown.
    diagnosis = diagnose(LOG + "z.backward()\n", {"x0": 2.5, "w0": 1.5}, "w.grad", 1 / 7.5)
    assert (diagnosis.kind, diagnosis.detail["edge"], diagnosis.detail["rule"]) == (
        "wrong_local_derivative", ["w", "mul"], "mul_other_differentiated")
    assert "uses 1/(3·x) = 0.133333 as the local derivative of mul with respect to w" in diagnosis.message
    assert "the right one is log(3·x) = 2.0149" in diagnosis.message  # 3·x as written, not x·3


def test_a_constant_factor_reads_as_written_and_the_edge_in_path_names() -> None:
    # d log(u)/du taken as log(u): w·log(3x)·3. The words said "x·3" and "the edge x·3 → log".
    diagnosis = diagnose(LOG + "z.backward()\n", {"x0": 2.5, "w0": 1.5}, "x.grad", 1.5 * math.log(7.5) * 3)
    assert diagnosis.detail["edge"] == ["mul", "log"]
    assert "log with respect to 3·x (the edge mul → log)" in diagnosis.message


DETACHED = ("w = torch.tensor(w0, requires_grad=True)\nx = torch.tensor(x0, requires_grad=True)\nh = w * x\n"
            "L = h * h.detach() + w\nL.backward()\n")
AT = {"w0": 1.5, "x0": -0.75}  # h = -1.125; x.grad = h·w, w.grad = h·x + 1


def test_the_only_live_path_left_out_beside_a_detach() -> None:
    # "the detach stops all of x's gradient": 0. Was two_mistakes (a detached path and a sign).
    diagnosis = diagnose(DETACHED, AT, "x.grad", 0.0)
    assert (diagnosis.kind, diagnosis.paths) == ("missing_path", [["x", "mul", "mul", "add", "L"]])
    assert "detach() cuts only the path that runs through it" in diagnosis.message
    assert "paths" not in diagnosis.message.replace("path that", "")  # one live path: no parallel paths


def test_two_path_slips_at_once() -> None:
    # The detached path counted (+h·x) and the + w left out (-1): 2·h·x. Was a path and a "2·1" factor.
    diagnosis = diagnose(DETACHED, AT, "w.grad", 2 * -1.125 * -0.75)
    assert diagnosis.kind == "two_mistakes"
    assert mistakes(diagnosis) == [("extra_path", [["w", "mul", "detach", "mul", "add", "L"]]),
                                   ("missing_path", [["w", "add", "L"]])]
    assert "also counts w → mul → detach → mul → add → L, which detach() cuts" in diagnosis.message


def test_a_detached_path_counted_with_a_slip_on_the_same_path() -> None:
    # TD error squared: dL/dw = 2·(q - t)·x with t = (w·y).detach(). Counting the target's path adds
    # -2·(q - t)·y, and the 2 of the square dropped halves both: (q - t)·(x - y). Was unknown.
    program = ("w = torch.tensor(w0, requires_grad=True)\nq = w * x\nt = (w * y).detach()\nL = (q - t)**2\n"
               "L.backward()\n")
    w, x, y = 0.8, 1.3, -0.6  # x - y ≠ 2, or the answer were also "x taken as 1"
    diagnosis = diagnose(program, {"w0": w, "x": x, "y": y}, "w.grad", (w * x - w * y) * (x - y))
    assert diagnosis.kind == "two_mistakes"
    assert mistakes(diagnosis) == [("extra_path", [["w", "mul", "detach", "sub", "pow", "L"]]),
                                   ("wrong_local_derivative", ["sub", "pow"])]
    assert "q - t" in diagnosis.message


NORM = ("x = torch.tensor(x0, requires_grad=True)\ny = torch.tensor(y0, requires_grad=True)\n"
        "r = torch.sqrt(x**2 + y**2)\nr.backward()\n")
POINTS = [{"x0": 1.2, "y0": 0.5}, {"x0": -0.7, "y0": 2.0}, {"x0": 2.5, "y0": -1.5}]


def test_a_catalogued_factor_two_beats_a_path_counted_twice() -> None:
    # The formula 2x/√(x² + y²): √'s ½ forgotten. Was "counts the path twice" (the only path).
    analyses = analyses_at(NORM, POINTS, ["x.grad"])
    answers = [2 * p["x0"] / math.hypot(p["x0"], p["y0"]) for p in POINTS]
    diagnosis = diagnose_points(analyses=analyses, part="x.grad", answers=answers, rel_tol=1e-4, abs_tol=1e-6,
                                subject="formula")
    assert (diagnosis.kind, diagnosis.detail["edge"], diagnosis.detail["rule"]) == (
        "wrong_local_derivative", ["add", "sqrt"], "sqrt_no_half")


def test_an_unknown_formula_points_to_the_nearest_slip_at_every_point_as_a_guess() -> None:
    # sin′ taken as -cos and 5 % off besides: no mistake fits, sin's edge comes closest everywhere.
    program = "x = torch.tensor(x0, requires_grad=True)\nz = torch.sin(x) * 3\nz.backward()\n"
    points = [{"x0": 0.4}, {"x0": 1.1}, {"x0": -0.9}]
    answers = [-math.cos(p["x0"]) * 3 * 1.05 for p in points]
    diagnosis = diagnose_points(analyses=analyses_at(program, points, ["x.grad"]), part="x.grad",
                                answers=answers, rel_tol=1e-4, abs_tol=1e-6, subject="formula")
    assert diagnosis.kind == "unknown" and diagnosis.detail["closest_edge"] == ["x", "sin"]
    assert "A guess, not a diagnosis: your number comes closest to (but is not)" in diagnosis.message
    assert "-cos(x) as the local derivative of sin with respect to x (the edge x → sin)" in diagnosis.message


def test_a_loss_speaks_of_the_students_prediction_and_target() -> None:
    # mse's 2 dropped: Σ(p - y)·x / N. The words said "(x - y)" where x is the data, not the prediction.
    program = ("x = torch.tensor(xs)\ny = torch.tensor(ys)\nw = torch.tensor(w0, requires_grad=True)\n"
               "L = torch.nn.functional.mse_loss(w * x, y)\nL.backward()\n")
    xs, ys, w = [1.0, 2.0, -1.0], [0.5, 1.0, 2.0], 0.7
    answer = sum((w * a - b) * a for a, b in zip(xs, ys, strict=True)) / 3
    diagnosis = diagnose(program, {"xs": xs, "ys": ys, "w0": w}, "w.grad", answer)
    assert (diagnosis.kind, diagnosis.detail["rule"]) == ("wrong_local_derivative", "mse_no_two")
    assert "(w·x - y)/3" in diagnosis.message and "2·(w·x - y)/3" in diagnosis.message
    assert "(x - y)" not in diagnosis.message


def test_a_one_hot_seed_names_its_entry_in_words() -> None:
    # Only the second output entry seeded: [0, 2·x₂·1, 0]. The words said "entry 1".
    program = "x = torch.tensor(xs, requires_grad=True)\ny = x**2\ny.backward(torch.tensor(v))\n"
    diagnosis = diagnose(program, {"xs": [1.0, 2.0, 3.0], "v": [1.0, 0.5, 2.0]}, "x.grad", [0.0, 4.0, 0.0])
    assert (diagnosis.kind, diagnosis.detail["seed"]) == ("seed_vector", "one_hot")
    assert "the one-hot seed that picks only the second entry" in diagnosis.message


def test_a_matrix_products_generic_slip_states_the_right_factor() -> None:
    # d(x @ W)/dx with the sign flipped: -(grad @ Wᵀ). The words said "where the right one is its local
    # derivative".
    program = ("x = torch.tensor(xs, requires_grad=True)\nW = torch.tensor(ws)\nL = (x @ W).sum()\n"
               "L.backward()\n")
    ws = [[1.0, 2.0], [3.0, -1.0]]
    answer = [[-3.0, -2.0]]  # grad = ones(1, 2): grad @ Wᵀ = [[3, 2]], flipped
    diagnosis = diagnose(program, {"xs": [[0.5, -0.5]], "ws": ws}, "x.grad", answer)
    assert diagnosis.kind in ("wrong_local_derivative", "sign_error")
    analysis = analyze_program(program=program, params={"xs": [[0.5, -0.5]], "ws": ws}, parts=["x.grad"])
    rights = {h.detail["right"] for h in analysis.hypotheses["x.grad"]
              if h.kind == "wrong_local_derivative" and h.detail["edge"] == ["x", "mm"]}
    assert rights == {"grad @ Wᵀ"}


def test_an_unnamed_input_gets_a_symbol_the_words_define() -> None:
    # sin′ taken as -cos at u = erf(x): -cos(u)·erf′(x). The words said "with respect to u (the edge u → sin)"
    # with no u anywhere in the program.
    program = "x = torch.tensor(x0, requires_grad=True)\nz = torch.sin(torch.special.erf(x))\nz.backward()\n"
    x = 0.6
    inner = math.erf(x)
    answer = -math.cos(inner) * 2 / math.sqrt(math.pi) * math.exp(-x * x)
    diagnosis = diagnose(program, {"x0": x}, "x.grad", answer)
    assert (diagnosis.kind, diagnosis.detail["edge"]) == ("wrong_local_derivative", ["erf", "sin"])
    assert "with respect to u (the output of erf; the edge erf → sin)" in diagnosis.message


def test_a_formula_is_your_formula_but_the_programs_grad_stays_the_programs() -> None:
    """'Your formula keeps only the last backward call, as if each call overwrote your formula. The program
    ... never zeroes your formula': every x.grad became 'your formula', also the program's own .grad."""
    from chainrule.diagnosis.subject_words import spoken_of

    message = ("Your x.grad keeps only the last backward call, as if each call overwrote x.grad. The program "
               "calls backward() 2 times and never zeroes x.grad. x.grad has the shape of x.")
    spoken = spoken_of(message, part="x.grad", subject="formula")
    assert spoken == ("Your formula keeps only the last backward call, as if each call overwrote x.grad. The program "
                      "calls backward() 2 times and never zeroes x.grad. Your formula has the shape of x.")
