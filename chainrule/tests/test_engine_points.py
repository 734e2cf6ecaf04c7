"""A formula asked about a kink is checked on both sides of it,
so relu′ at a dead unit cannot be passed with `0`; without kinks the points
still keep the seed's signs."""

from __future__ import annotations

from chainrule import analyze_program
from chainrule.answers.formula_grading import grade_symbolic
from chainrule.answers.formula_sympy import formulas_equivalent
from chainrule.evaluation_points import evaluation_points, kink_sides, usable_points

DEAD_RELU = "x = torch.tensor([x0], requires_grad=True)\ny = torch.relu(x)\ny.backward()\n"
SQUARE = "x = torch.tensor([x0], requires_grad=True)\ny = x ** 2\ny.backward()\n"


def kept_points(program: str) -> tuple[list[dict[str, object]], list]:
    drawn = evaluation_points(params={"x0": -1.5}, ranges={}, count=9, seed="dead-relu/variant", vary=["x0"],
                              mirrored=3)
    analyses = [analyze_program(program=program, params=point, parts=["x.grad"]) for point in drawn]
    return usable_points(drawn, list(analyses), count=5)


def test_the_points_reach_both_sides_of_the_relu() -> None:
    points, analyses = kept_points(DEAD_RELU)
    assert any(point["x0"] > 0 for point in points) and points[0] == {"x0": -1.5}
    assert {side for analysis in analyses for (_, _, side) in kink_sides(analysis)} == {True, False}
    assert len(points) == 6


def test_zero_no_longer_passes_for_relus_derivative() -> None:
    points, analyses = kept_points(DEAD_RELU)
    def grade(text: str) -> bool:
        return grade_symbolic(text=text, variables={"x": "x0"}, analyses=analyses, points=points, part="x.grad",
                              reference_formula="step(x)", rel_tol=1e-4, abs_tol=1e-6,
                              equivalence=formulas_equivalent).correct
    assert not grade("0")
    assert grade("step(x)")


def test_without_a_kink_the_points_keep_the_seeds_sign() -> None:
    points, _ = kept_points(SQUARE)
    assert all(point["x0"] < 0 for point in points) and len(points) == 6
