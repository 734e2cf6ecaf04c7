from __future__ import annotations

import json

import pytest

from chainrule import Analysis, diagnose_numeric
from chainrule.tests.seeds import SEEDS, seed_analysis
from chainrule.values import values_match


@pytest.mark.parametrize("slug", sorted(SEEDS))
def test_it_reproduces_the_seed_answers(slug: str) -> None:
    analysis = seed_analysis(slug)
    for part, answer in SEEDS[slug].answers.items():
        assert values_match(analysis.parts[part].value, answer, rel_tol=1e-6, abs_tol=1e-9), part


@pytest.mark.parametrize("slug", sorted(SEEDS))
def test_it_accepts_each_seed_answer_as_correct(slug: str) -> None:
    for part, answer in SEEDS[slug].answers.items():
        diagnosis = diagnose_numeric(analysis=seed_analysis(slug), part=part, answer=answer,
                                     rel_tol=1e-4, abs_tol=1e-6)
        assert diagnosis.correct and diagnosis.kind == "correct"


def test_it_keeps_the_shape_so_a_one_element_gradient_accepts_a_plain_number() -> None:
    analysis = seed_analysis("positive-gradient")
    assert analysis.parts["x.grad"].value == [7.0]
    assert analysis.parts["x.grad"].shape == [1]
    for answer in (7.0, [7.0]):
        assert diagnose_numeric(analysis=analysis, part="x.grad", answer=answer, rel_tol=1e-4, abs_tol=1e-6).correct


def test_it_reports_none_for_the_untracked_leaf() -> None:
    part = seed_analysis("untracked-leaf").parts["x.grad"]
    assert part.value is None and part.shape is None and part.requires_grad is False


def test_it_names_the_walkthrough_paths_in_spec_notation() -> None:
    paths = seed_analysis("visual-walkthrough").paths
    assert {tuple(p.names): p.contribution for p in paths["x"]} == {
        ("x", "mul", "add", "z"): [3.0],
        ("x", "pow", "add", "z"): [4.0],
    }
    assert [p.names for p in paths["y"]] == [["y", "mul", "add", "z"]]


def test_it_merges_the_two_edges_of_x_times_x_into_one_path() -> None:
    paths = seed_analysis("multiple-paths").paths["x"]
    assert {tuple(p.names): p.contribution for p in paths} == {
        ("x", "mul", "add", "z"): [6.0],
        ("x", "add", "z"): [1.0],
    }


def test_it_draws_the_detach_cut_and_the_untracked_tensors() -> None:
    detach = seed_analysis("detach").graph
    (cut,) = detach.cut_edges
    assert detach.node(cut[0]).name == "pow"  # type: ignore[union-attr]
    assert detach.node(cut[1]).name == "b" and not detach.node(cut[1]).tracked  # type: ignore[union-attr]
    untracked = seed_analysis("untracked-leaf").graph
    assert [untracked.node(i).name for i in untracked.untracked] == ["x"]  # type: ignore[union-attr]


def test_it_keeps_forward_values_on_every_node() -> None:
    graph = seed_analysis("visual-walkthrough").graph
    values = {(node.kind, node.name): node.value for node in graph.nodes}
    assert values == {
        ("leaf", "x"): [2.0], ("leaf", "y"): [3.0], ("op", "mul"): [6.0], ("op", "pow"): [4.0],
        ("op", "add"): [10.0], ("output", "z"): [10.0],
    }


@pytest.mark.parametrize("slug", sorted(SEEDS))
def test_it_round_trips_the_analysis_through_json(slug: str) -> None:
    analysis = seed_analysis(slug)
    text = json.dumps(analysis.to_json(), allow_nan=False)
    assert Analysis.from_json(json.loads(text)) == analysis
    assert Analysis.from_json(json.loads(text)).to_json() == json.loads(text)
