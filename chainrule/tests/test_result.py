from __future__ import annotations

import json

from chainrule import GradedPart, build_result, diagnose_numeric, parse_numeric
from chainrule.result import verdict
from chainrule.tests.seeds import seed_analysis


def graded(part: str, text: str) -> GradedPart:
    analysis = seed_analysis("visual-walkthrough")
    diagnosis = diagnose_numeric(analysis=analysis, part=part, answer=parse_numeric(text))
    return GradedPart(diagnosis=diagnosis, answer=text, max_score=1.0)


def test_it_builds_the_spec_result_document() -> None:
    result = build_result(assignment="visual-walkthrough", parts=[graded("x.grad", "4"), graded("y.grad", "2")])
    assert result["assignment"] == "visual-walkthrough"
    assert (result["score"], result["max_score"]) == (1.0, 2.0)
    wrong, right = result["parts"]
    assert wrong["part"] == "x.grad" and wrong["answer"] == "4" and wrong["correct"] is False
    assert wrong["diagnosis"]["kind"] == "missing_path"
    assert wrong["diagnosis"]["paths"] == [["x", "mul", "add", "z"]]
    assert right["diagnosis"]["kind"] == "correct" and right["score"] == 1.0
    assert "expected" not in wrong
    json.dumps(result, allow_nan=False)


def test_it_shows_the_expected_value_only_when_asked() -> None:
    result = build_result(assignment="a", parts=[graded("x.grad", "4")], expected_shown=True)
    assert result["parts"][0]["expected"] == [7.0]


def test_it_gives_partial_credit_by_kind_when_the_course_wants_it() -> None:
    result = build_result(assignment="a", parts=[graded("x.grad", "4"), graded("x.grad", "100")],
                          partial_credit={"missing_path": 0.5})
    assert [part["score"] for part in result["parts"]] == [0.5, 0.0]
    assert result["score"] == 0.5


def test_it_links_the_graph_picture_when_given() -> None:
    part = graded("y.grad", "2")
    with_url = GradedPart(diagnosis=part.diagnosis, answer="2", graph_svg_url="/graphs/1.svg")
    assert build_result(assignment="a", parts=[with_url])["parts"][0]["graph_svg_url"] == "/graphs/1.svg"


def several(components: dict[str, dict[str, object]], *, per_gradient: bool) -> dict[str, object]:
    from chainrule import Diagnosis

    diagnosis = Diagnosis("grad_z", False, "missing_path", [], "…", detail={"components": components})
    part = GradedPart(diagnosis=diagnosis, answer="def …", max_score=3.0, per_gradient=per_gradient)
    return build_result(assignment="a", parts=[part])["parts"][0]


def test_a_part_asking_for_it_earns_a_share_per_right_gradient_none_expected_included() -> None:
    components = {"x.grad": {"correct": False, "expected": 7.0}, "y.grad": {"correct": True, "expected": 2.0},
                  "z.grad": {"correct": True, "expected": 1.0}, "u.grad": {"correct": True, "expected": None}}
    part = several(components, per_gradient=True)
    assert part["score"] == 2.25 and part["correct"] is False
    assert verdict(part) == "partly right"


def test_a_wrong_gradient_whose_right_value_is_none_costs_the_part_its_points() -> None:
    """A fix that tracks x (x.grad a number where None is right) was graded 1 / 1: the None did not count."""
    components = {"w.grad": {"correct": True, "expected": [2.0]}, "x.grad": {"correct": False, "expected": None}}
    assert several(components, per_gradient=True)["score"] == 1.5
    part = several(components, per_gradient=False)
    assert part["score"] == 0.0 and verdict(part) == "incorrect"


def test_a_part_not_asking_for_shares_is_all_or_nothing() -> None:
    components = {"x.grad": {"correct": False, "expected": 7.0}, "y.grad": {"correct": True, "expected": 2.0}}
    assert several(components, per_gradient=False)["score"] == 0.0


def test_the_verdict_follows_the_score() -> None:
    assert verdict({"correct": True, "score": 1.0, "max_score": 1.0}) == "correct"
    assert verdict({"correct": False, "score": 0.5, "max_score": 1.0}) == "partly right"
    assert verdict({"correct": False, "score": 0, "max_score": 1.0}) == "incorrect"
    assert verdict({"correct": False, "score": 1.0, "max_score": 1.0, "override": {"score": 1.0}}) == "credited"


def test_a_code_diagnosis_names_the_students_lines_where_the_mistake_is() -> None:
    from chainrule.diagnosis.numeric import Diagnosis
    from chainrule.result import diagnosis_document

    told = Diagnosis("x.grad", False, "accumulation", [], "…", detail={"line": 4, "lines": [3, 5]})
    raised = Diagnosis("x.grad", False, "code_error", [], "…", detail={"code": {"line": 7}})
    named = Diagnosis("x.grad", False, "missing_path", [], "…", detail={"cause_lines": [9, 2, 9]})
    assert diagnosis_document(told)["lines"] == [4]  # the reset's line, not the backward calls'
    assert diagnosis_document(raised)["lines"] == [7]
    assert diagnosis_document(named)["lines"] == [2, 9]
    assert "lines" not in diagnosis_document(Diagnosis("x.grad", False, "sign_error", [], "…"))
