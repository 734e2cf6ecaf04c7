from __future__ import annotations

import shutil

import pytest

from chainrule import GraphvizMissing, Highlight, diagnose_numeric, graph_dot, graph_svg, picture
from chainrule.tests.seeds import seed_analysis

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")


def test_it_draws_leaves_as_ellipses_and_operations_as_rounded_boxes() -> None:
    dot = graph_dot(analysis=seed_analysis("visual-walkthrough"))
    assert '"leaf:x" [shape="ellipse", label="x = 2"]' in dot
    assert 'shape="box", style="rounded", label="mul\\na = 6"' in dot
    assert 'label="z = 10", peripheries="2"' in dot
    assert 'rankdir="LR"' in dot


def test_it_draws_the_detach_cut_dashed_grey_and_the_detached_tensor_untracked() -> None:
    dot = graph_dot(analysis=seed_analysis("detach"))
    assert 'style="dashed", color="gray55", fontcolor="gray35", label="detach: no gradient"' in dot
    assert 'label="b = 4\\nnot tracked", style="filled,dashed"' in dot


def test_it_draws_wrong_edges_red_and_missing_edges_orange() -> None:
    analysis = seed_analysis("visual-walkthrough")
    missing = diagnose_numeric(analysis=analysis, part="x.grad", answer=4.0).highlight
    dot = graph_dot(analysis=analysis, highlight=missing)
    assert dot.count('color="orange"') == 2
    wrong = Highlight(wrong_edges=[("leaf:x", "op4")], nodes=["leaf:y"])
    dot = graph_dot(analysis=analysis, highlight=wrong)
    assert '"leaf:x" -> "op4" [color="red", penwidth="2.5"];' in dot
    assert dot.count('color="red"') == 2


def test_it_escapes_labels_so_they_cannot_break_the_dot_text() -> None:
    assert picture.quoted('a"b\\N\nc') == '"a\\"b\\\\N\\nc"'
    dot = graph_dot(analysis=seed_analysis("dead-relu"), title='evil" ] ; x -> y [label="')
    assert dot.splitlines()[0] == 'digraph "evil\\" ] ; x -> y [label=\\"" {'


@needs_dot
def test_it_renders_a_deterministic_svg_with_a_title() -> None:
    analysis = seed_analysis("detach")
    highlight = diagnose_numeric(analysis=analysis, part="x.grad", answer=12.0).highlight
    first = graph_svg(analysis=analysis, highlight=highlight)
    assert first.lstrip().startswith("<?xml") and "<svg" in first
    assert "<title>Computational graph of z</title>" in first
    assert "detach: no gradient" in first
    assert graph_svg(analysis=analysis, highlight=highlight) == first


def test_it_says_clearly_when_graphviz_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(picture.shutil, "which", lambda name: None)
    with pytest.raises(GraphvizMissing, match="Graphviz is not installed"):
        graph_svg(analysis=seed_analysis("dead-relu"))
