from __future__ import annotations

import pytest

from chainrule import Diagnosis, diagnose_numeric
from chainrule.diagnosis.messages import UNTRACKED_RULE
from chainrule.tests.seeds import seed_analysis
from chainrule.values import Value


def diagnose(slug: str, part: str, answer: Value) -> Diagnosis:
    return diagnose_numeric(analysis=seed_analysis(slug), part=part, answer=answer, rel_tol=1e-4, abs_tol=1e-6)


def test_it_finds_the_missing_multiply_path_in_the_walkthrough() -> None:
    diagnosis = diagnose("visual-walkthrough", "x.grad", 4.0)
    assert diagnosis.kind == "missing_path"  # although b = x² = 4 is a forward value too
    assert diagnosis.paths == [["x", "mul", "add", "z"]]
    assert "x → mul → add → z" in diagnosis.message
    assert "parallel paths into one node add" in diagnosis.message
    assert "forward_value" in diagnosis.also


def test_it_finds_the_missing_square_path_in_the_walkthrough() -> None:
    diagnosis = diagnose("visual-walkthrough", "x.grad", 3.0)
    assert (diagnosis.kind, diagnosis.paths) == ("missing_path", [["x", "pow", "add", "z"]])


def test_it_highlights_the_missing_path_edges_only() -> None:
    highlight = diagnose("visual-walkthrough", "x.grad", 4.0).highlight
    analysis = seed_analysis("visual-walkthrough")
    names = [(analysis.graph.node(a).name, analysis.graph.node(b).name)  # type: ignore[union-attr]
             for a, b in highlight.missing_edges]
    assert names == [("x", "mul"), ("mul", "add")]


def test_it_recognises_the_product_of_parallel_paths() -> None:
    diagnosis = diagnose("visual-walkthrough", "x.grad", 12.0)
    assert diagnosis.kind == "product_of_paths"
    assert sorted(diagnosis.paths) == [["x", "mul", "add", "z"], ["x", "pow", "add", "z"]]
    assert "add" in diagnosis.message


def test_it_recognises_a_path_counted_through_detach() -> None:
    diagnosis = diagnose("detach", "x.grad", 12.0)
    assert diagnosis.kind == "extra_path"
    assert diagnosis.paths == [["x", "pow", "detach", "mul", "z"]]
    assert "A detached tensor is a constant to autograd" in diagnosis.message


def test_it_recognises_one_flipped_path_sign() -> None:
    diagnosis = diagnose("negative-gradient", "x.grad", 16.0)
    assert (diagnosis.kind, diagnosis.paths) == ("sign_error", [["x", "pow", "sub", "z"]])
    assert "x → pow → sub → z" in diagnosis.message


def test_it_recognises_a_flipped_overall_sign() -> None:
    diagnosis = diagnose("negative-gradient", "x.grad", 8.0)
    assert diagnosis.kind == "sign_error" and diagnosis.detail["whole"] is True


def test_it_recognises_a_relu_slope_of_one_where_the_relu_is_off() -> None:
    diagnosis = diagnose("dead-relu", "x.grad", 1.0)
    assert (diagnosis.kind, diagnosis.paths) == ("dead_branch", [["x", "relu", "y"]])
    assert "A ReLU that saw a negative passes no gradient" in diagnosis.message


def test_it_recognises_a_single_backward_counted_instead_of_two() -> None:
    diagnosis = diagnose("accumulation", "x.grad", 4.0)
    assert diagnosis.kind == "accumulation"  # although y = 4 too
    assert diagnosis.detail == {"calls": 2, "counted": 1}
    assert ".grad accumulates across backward calls" in diagnosis.message


def test_it_recognises_a_backward_counted_twice_too_often() -> None:
    diagnosis = diagnose("accumulation", "x.grad", 12.0)
    assert diagnosis.kind == "accumulation" and diagnosis.detail["counted"] == 3


def test_it_recognises_zero_given_for_an_untracked_leaf() -> None:
    diagnosis = diagnose("untracked-leaf", "x.grad", 0.0)
    assert diagnosis.kind == "untracked_leaf"
    assert "None means never tracked, 0 means tracked with zero slope" in diagnosis.message
    assert "requires_grad=False" in diagnosis.message
    node = seed_analysis("untracked-leaf").graph.node(diagnosis.highlight.nodes[0])
    assert node is not None and not node.tracked


def test_it_recognises_none_given_for_a_tracked_leaf() -> None:
    diagnosis = diagnose("dead-relu", "x.grad", None)
    assert diagnosis.kind == "untracked_leaf"
    assert "not None" in diagnosis.message


def test_it_calls_the_sum_of_a_vector_gradient_a_shape_mistake_and_mentions_the_seed() -> None:
    diagnosis = diagnose("non-scalar", "x.grad", 12.0)
    assert diagnosis.kind == "shape"
    assert "added up the entries" in diagnosis.message
    assert "a non-scalar backward needs a seed vector" in diagnosis.message
    assert "the result has the leaf's shape" in diagnosis.message


def test_it_gives_shape_feedback_for_any_wrong_shape() -> None:
    diagnosis = diagnose("non-scalar", "x.grad", [2.0, 4.0])
    assert diagnosis.kind == "shape" and not diagnosis.correct


@pytest.mark.parametrize(("answer", "seed"), [([2.0, 0.0, 0.0], "one_hot"), ([2.0, 16.0, 54.0], "output")])
def test_it_recognises_a_wrong_seed_vector(answer: Value, seed: str) -> None:
    diagnosis = diagnose("non-scalar", "x.grad", answer)
    assert diagnosis.kind == "seed_vector" and diagnosis.detail["seed"] == seed
    assert "seed" in diagnosis.message


def test_it_recognises_the_forward_value_given_as_gradient() -> None:
    diagnosis = diagnose("positive-gradient", "x.grad", 10.0)
    assert diagnosis.kind == "forward_value"
    assert diagnosis.detail["name"] == "z"
    assert "forward value of z" in diagnosis.message


def test_it_names_the_edge_of_a_wrong_power_rule() -> None:
    diagnosis = diagnose("negative-gradient", "x.grad", -2.0)
    assert diagnosis.kind == "wrong_local_derivative"
    assert diagnosis.detail["edge"] == ["x", "pow"]
    assert (diagnosis.detail["used"], diagnosis.detail["right"]) == ("3·x", "3·x^2")
    assert diagnosis.paths == [["x", "pow", "sub", "z"]]
    assert "x → pow" in diagnosis.message


def test_it_names_the_other_input_for_a_wrong_product_rule() -> None:
    diagnosis = diagnose("visual-walkthrough", "y.grad", 3.0)
    assert diagnosis.kind in ("wrong_local_derivative", "forward_value")
    assert "wrong_local_derivative" in [diagnosis.kind, *diagnosis.also]


def test_it_still_says_which_gradient_is_off_when_nothing_fits() -> None:
    diagnosis = diagnose("visual-walkthrough", "x.grad", 7.5)
    assert diagnosis.kind == "unknown" and not diagnosis.correct
    assert "x.grad" in diagnosis.message and "too large by less than 10 %" in diagnosis.message
    assert diagnosis.detail["difference"] == pytest.approx(0.5)


def test_it_says_which_entries_are_off_for_a_vector() -> None:
    diagnosis = diagnose("non-scalar", "x.grad", [2.0, 5.0, 6.0])
    assert diagnosis.kind == "unknown" and "the second is off" in diagnosis.message  # no "positions 1"
    assert "position" not in diagnosis.message


@pytest.mark.parametrize(
    ("slug", "part", "answer"),
    [
        ("visual-walkthrough", "x.grad", 4.0), ("visual-walkthrough", "x.grad", 12.0),
        ("detach", "x.grad", 12.0), ("negative-gradient", "x.grad", 16.0), ("dead-relu", "x.grad", 1.0),
        ("accumulation", "x.grad", 4.0), ("untracked-leaf", "x.grad", 0.0), ("non-scalar", "x.grad", 12.0),
        ("positive-gradient", "x.grad", 10.0), ("negative-gradient", "x.grad", -2.0),
        ("visual-walkthrough", "x.grad", 7.5), ("dead-relu", "x.grad", None),
    ],
)
def test_it_never_reveals_the_expected_value_in_the_message(slug: str, part: str, answer: Value) -> None:
    diagnosis = diagnose(slug, part, answer)
    # The None-versus-0 rule is taught verbatim; it names no part's value.
    message = diagnosis.message.replace(UNTRACKED_RULE, "")
    expected = {"visual-walkthrough": "7", "detach": "4", "negative-gradient": "-8", "dead-relu": "0",
                "accumulation": "8", "untracked-leaf": "None", "non-scalar": "[2, 4, 6]",
                "positive-gradient": "7"}[slug]
    assert f" {expected}" not in message and f"{expected}." not in message
    assert diagnosis.expected is not None or slug == "untracked-leaf"


def test_it_rejects_an_unknown_part() -> None:
    with pytest.raises(ValueError, match="no part"):
        diagnose("visual-walkthrough", "q.grad", 1.0)


def test_how_far_compares_sizes_so_a_smaller_negative_value_is_too_small() -> None:
    from chainrule.diagnosis.numeric import how_far

    assert how_far([-0.04], [-0.218]) == "It is too small by 50 to 100 %."  # was "too large": -0.04 > -0.218
    assert how_far([-0.3], [-0.218]) == "It is too large by 10 to 50 %."
    assert how_far([0.0], [1.0]) == "It is 0, where the gradient autograd computes is not."


def test_zero_is_not_the_forward_value_of_a_node_that_happens_to_be_zero() -> None:
    """linear-layer's z is 0.5 - 0.6 + 0.1 (2e-8 in float32): b.grad = 0 was 'the forward value of z'."""
    diagnosis = diagnose("linear-layer", "b.grad", 0.0)
    assert diagnosis.kind != "forward_value" and "forward value" not in diagnosis.message
    assert "It is 0" in diagnosis.message
