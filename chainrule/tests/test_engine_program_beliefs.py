"""Beliefs the held-out corpus exposed that live in the program's structure, not one op: hooks
applied in every replayed backward pass, a retained graph believed replayed, a seed's scale,
several paths at once, routes that read alike, the same slip at two sites, and the words for
a non-leaf's None and an unknown's closest edge. Expectations come from the student's belief."""

from __future__ import annotations

import math

from chainrule import analyze_program
from chainrule.result import diagnosis_document
from chainrule.tests.program_diagnosis import diagnose

HOOKED = ("w = torch.tensor(ws, requires_grad=True)\nh = w * 3\nh.register_hook(lambda g: g * 0.5)\n"
          "L = (h ** 3).sum()\nL.backward()\n")


def test_a_slip_is_measured_with_the_programs_hook_in_place() -> None:
    ws = [1.0, -2.0]
    # right: 3·h²·0.5·3 with h = 3w; the cube's power rule forgotten (3h² taken as h²), the hook still halving
    answer = [(3 * w) ** 2 * 0.5 * 3 for w in ws]
    diagnosis = diagnose(HOOKED, {"ws": ws}, "w.grad", answer)
    assert (diagnosis.kind, diagnosis.detail["edge"]) == ("wrong_local_derivative", ["mul", "pow"])
    analysis = analyze_program(program=HOOKED, params={"ws": ws}, parts=["w.grad"])
    assert not any("do not add up" in note for note in analysis.notes)  # the paths carry the hook too


def test_a_retained_graph_believed_replayed_by_the_next_call() -> None:
    program = ("x = torch.tensor(x0, requires_grad=True)\ny = x ** 2\ny.backward(retain_graph=True)\n"
               "(3 * y).backward()\n")
    x0 = 1.5
    first, second = 2 * x0, 6 * x0
    diagnosis = diagnose(program, {"x0": x0}, "x.grad", 2 * first + second)
    assert (diagnosis.kind, diagnosis.detail.get("belief")) == ("accumulation", "retained_replayed")
    assert "retain_graph=True only keeps" in diagnosis.message


def test_a_seeds_scale_dropped() -> None:
    program = ("x = torch.tensor(xs, requires_grad=True)\ny = torch.sin(x)\n"
               "y.backward(0.5 * torch.tensor(vs))\n")
    xs, vs = [0.3, 1.2], [1.0, -2.0]
    unscaled = [math.cos(x) * v for x, v in zip(xs, vs, strict=True)]  # = twice the right answer
    diagnosis = diagnose(program, {"xs": xs, "vs": vs}, "x.grad", unscaled)
    assert (diagnosis.kind, diagnosis.detail["seed"]) == ("seed_vector", "unscaled")
    assert "without its scale 0.5" in diagnosis.message


FOUR_PATHS = ("x = torch.tensor(x0, requires_grad=True)\na = x * 2\nb = torch.sin(x)\nc = x ** 2\n"
              "L = x * 5 + a * b + c * a\nL.backward()\n")


def test_only_one_path_followed_leaves_out_several_at_once() -> None:
    diagnosis = diagnose(FOUR_PATHS, {"x0": 0.7}, "x.grad", 5.0)  # the direct path only
    assert diagnosis.kind == "missing_path" and len(diagnosis.paths) == 4
    assert ["x", "mul", "add", "L"] not in diagnosis.paths


def test_one_of_two_routes_that_read_alike() -> None:
    program = ("x = torch.tensor(x0, requires_grad=True)\np = torch.sigmoid(x * 2)\nq = torch.sigmoid(x * 3)\n"
               "L = torch.tanh(p * 0.5 + q * 4)\nL.backward()\n")
    x0 = 0.4
    p, q = 1 / (1 + math.exp(-2 * x0)), 1 / (1 + math.exp(-3 * x0))
    outer = 1 - math.tanh(0.5 * p + 4 * q) ** 2
    only_q = outer * 4 * q * (1 - q) * 3  # the route through p (same names: mul → sigmoid → mul → add) left out
    diagnosis = diagnose(program, {"x0": x0}, "x.grad", only_q)
    assert diagnosis.kind == "missing_path" and diagnosis.detail.get("routes") == 2
    assert "one of the 2 routes" in diagnosis.message


def test_the_same_slip_at_both_sites_of_an_op_is_one_rule() -> None:
    """Both means' 1/N forgotten is one belief about mean′, told once (it was two mistakes)."""
    program = ("x = torch.tensor(xs, requires_grad=True)\na = x.mean()\nb = (x * x).mean()\n"
               "L = a * 3 + b\nL.backward()\n")
    xs = [1.0, 2.0, -0.5, 4.0]
    both_sums = [3 + 2 * x for x in xs]  # both means' 1/N forgotten
    diagnosis = diagnose(program, {"xs": xs}, "x.grad", both_sums)
    assert (diagnosis.kind, diagnosis.detail["rule"], diagnosis.detail["everywhere"]) == (
        "wrong_local_derivative", "mean_normaliser", 2)
    assert "at both of the mean nodes of the program" in diagnosis.message


def test_a_non_leafs_none_is_no_gradient_kept_not_never_tracked() -> None:
    program = "w = torch.tensor(ws, requires_grad=True) * 2\nL = (w ** 2).sum()\nL.backward()\n"
    diagnosis = diagnose(program, {"ws": [1.0, 3.0]}, "w.grad", [4.0, 12.0])
    assert diagnosis.kind == "untracked_leaf" and diagnosis.detail["reason"] == "not_a_leaf"
    assert "never tracked" not in diagnosis.message and "retain_grad()" in diagnosis.message


def test_an_unknowns_document_names_the_closest_edge_as_a_guess() -> None:
    program = "x = torch.tensor(x0, requires_grad=True)\nL = torch.sin(x) * 4\nL.backward()\n"
    x0 = 0.8
    near = -4 * math.cos(x0) * 1.05  # close to sin′ taken as -cos, but not it
    document = diagnosis_document(diagnose(program, {"x0": x0}, "x.grad", near))
    assert document["kind"] == "unknown" and document["edge"] == ["x", "sin"] and document["guess"] is True


def test_a_path_through_a_no_grad_block_counted() -> None:
    program = ("w = torch.tensor(w0, requires_grad=True)\nwith torch.no_grad():\n    target = w * 2 + 1\n"
               "L = (w * 4 - target) ** 2\nL.backward()\n")
    w0 = 1.0
    error = 4 * w0 - (2 * w0 + 1)
    counted = 2 * error * (4 - 2)  # the target differentiated as if it were tracked
    diagnosis = diagnose(program, {"w0": w0}, "w.grad", counted)
    assert (diagnosis.kind, diagnosis.detail["reason"]) == ("extra_path", "no_grad")
    assert diagnosis.paths == [["w", "mul", "add", "sub", "pow", "L"]] and "torch.no_grad()" in diagnosis.message
