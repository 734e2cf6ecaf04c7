"""The picture teaches what the walkthrough's pictures teach, and hides what the viewer may not see yet."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from chainrule import (
    Analysis,
    Disclosure,
    GraphvizMissing,
    Highlight,
    analyze_program,
    diagnose_numeric,
    graph_dot,
    graph_svg,
)
from chainrule.picture import graph as picture
from chainrule.picture.graph import DETACHED, FULL_DETAIL, MISSING, NODE_DETAIL, WRONG
from chainrule.tests.seeds import seed_analysis

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
SVG = "{http://www.w3.org/2000/svg}"
EVERYTHING = Disclosure(everything=True)


def walkthrough() -> Analysis:
    """z = x·y + x² at x = 2, y = 3, with the engine's local derivatives filled in by hand."""
    analysis = replace(seed_analysis("visual-walkthrough"))
    ids = {node.tensor_name or node.name: node.id for node in analysis.graph.nodes if node.kind != "output"}
    slopes = [("x", "a", "y", 3.0), ("y", "a", "x", 2.0), ("x", "b", "2·x", 4.0), ("a", "z", "1", 1.0),
              ("b", "z", "1", 1.0)]
    analysis.local_derivatives = [{"source": ids[s], "target": ids[t], "formula": f, "value": v}
                                  for s, t, f, v in slopes]
    return analysis


def legend(dot: str) -> str:
    """The legend's words, its wrapped lines joined."""
    return " ".join(re.sub(r"<[^>]*>", " ", dot.split("label=<<table")[1].split(">>];")[0]).split())


def texts(svg: str) -> list[str]:
    return ["".join(element.itertext()).strip() for element in ET.fromstring(svg).iter(f"{SVG}text")]


def edge_strokes(svg: str) -> dict[str, set[tuple[str, str]]]:
    """Each drawn edge's title (`leaf:x->op3`) with the (stroke, width) of its lines."""
    found: dict[str, set[tuple[str, str]]] = {}
    for group in ET.fromstring(svg).iter(f"{SVG}g"):
        if group.get("class") == "edge":
            title = "".join(next(group.iter(f"{SVG}title")).itertext())
            for path in group.iter(f"{SVG}path"):
                found.setdefault(title, set()).add((path.get("stroke", ""), path.get("stroke-width", "1")))
    return found


@needs_dot
def test_it_shows_forward_values_formulas_slopes_and_the_merge_at_x_like_the_walkthrough() -> None:
    shown = texts(graph_svg(analysis=walkthrough(), disclosure=EVERYTHING))
    assert shown.count("∂z/∂b = 1") == 2  # the slope of b → add, and the gradient arriving at b
    for label in ["x = 2", "y = 3", "a = x·y = 6", "b = x² = 4", "a + b = 10", "z = 10",
                  "∂a/∂x = y = 3", "∂a/∂y = x = 2", "∂b/∂x = 2·x = 4", "∂z/∂a = 1", "∂z/∂b = 1",
                  "∂z/∂z = 1", "y.grad = 2", "← 3", "← 4", "← 2"]:
        assert label in shown, label
    # Where x's two roads meet, their contributions y = 3 and 2x = 4 add up to 7.
    assert any(re.fullmatch(r"x\.grad = (3 \+ 4) = 7", text) for text in shown), shown


@needs_dot
def test_without_the_engines_local_derivatives_the_edges_are_drawn_unlabelled() -> None:
    analysis = seed_analysis("visual-walkthrough")
    assert [text for text in texts(graph_svg(analysis=analysis, disclosure=EVERYTHING)) if text.startswith("∂a/∂")]
    analysis.local_derivatives = []  # an analysis cached before the engine stated them
    svg = graph_svg(analysis=analysis, disclosure=EVERYTHING)
    assert not [text for text in texts(svg) if text.startswith("∂a/∂")]
    assert len([title for title in edge_strokes(svg) if title.startswith("leaf:x")]) == 2


@needs_dot
def test_the_students_wrong_edge_is_drawn_thick_purple_with_what_they_used() -> None:
    analysis = walkthrough()
    mul = next(node.id for node in analysis.graph.nodes if node.name == "mul")
    svg = graph_svg(analysis=analysis, highlight=Highlight(wrong_edges=[("leaf:x", mul)]),
                    edge_notes={("leaf:x", mul): "✗ you used 1; right: y = 3"})
    strokes = edge_strokes(svg)
    assert (WRONG, "3.5") in strokes[f"leaf:x->{mul}"]
    assert all((WRONG, "3.5") not in lines for title, lines in strokes.items() if title != f"leaf:x->{mul}")
    assert "✗ you used 1; right: y = 3" in texts(svg)
    bare = graph_svg(analysis=analysis, highlight=Highlight(wrong_edges=[("leaf:x", mul)]),
                     edge_notes={("leaf:x", mul): "✗ wrong local derivative"})
    assert "✗ wrong local derivative; right: ∂a/∂x = y" in texts(bare)  # the rule; x.grad not disclosed
    bare = graph_svg(analysis=analysis, highlight=Highlight(wrong_edges=[("leaf:x", mul)]), disclosure=EVERYTHING,
                     edge_notes={("leaf:x", mul): "✗ wrong local derivative"})
    assert "✗ wrong local derivative; right: ∂a/∂x = y = 3" in texts(bare)


def test_an_extra_path_through_a_detach_is_marked_as_the_cut_not_as_a_wrong_factor() -> None:
    analysis = seed_analysis("detach")  # x.grad = 12 counts the path through b = a.detach()
    highlight = diagnose_numeric(analysis=analysis, part="x.grad", answer=12.0).highlight
    dot = graph_dot(analysis=analysis, highlight=highlight, disclosure=EVERYTHING)
    assert "✗ detach: no gradient flows back here" in dot
    assert "wrong local derivative" not in dot


@needs_dot
def test_a_student_who_has_not_got_x_grad_sees_no_gradient_that_gives_7_away() -> None:
    analysis = walkthrough()
    missing = diagnose_numeric(analysis=analysis, part="x.grad", answer=4.0).highlight
    shown = texts(graph_svg(analysis=analysis, highlight=missing, disclosure=Disclosure(keys=frozenset({"y.grad"}))))
    assert "y.grad = 2" in shown  # right already, so theirs to see
    assert not [text for text in shown if "7" in text or text.startswith("x.grad")]
    assert shown.count("∂z/∂b = 1") == 1  # the slope on the edge b → add; not the gradient arriving at b
    assert "← 3" not in shown and "← 4" not in shown
    # The rule of each machine on x's paths stays (it is what to learn), without its number:
    # "missing: … = 3" beside "∂b/∂x = … = 4" would hand over 3 + 4.
    assert "missing: ∂a/∂x = y" in shown and "∂b/∂x = 2·x" in shown, shown
    assert not [text for text in shown if text.startswith(("∂", "missing")) and text.endswith(("= 3", "= 4"))]
    nothing = texts(graph_svg(analysis=analysis, disclosure=Disclosure()))
    assert not [text for text in nothing if ".grad" in text]
    assert "∂z/∂z = 1" in nothing  # the seed belongs to the program, not to an answer


@needs_dot
def test_a_forward_value_asked_for_is_hidden_until_revealed() -> None:
    analysis = analyze_program(program="x = torch.tensor(x0, requires_grad=True)\nb = x**3\nz = 4*b\nz.backward()\n",
                               params={"x0": 2.0}, parts=["x.grad", "b"])
    assert "b = x³" in texts(graph_svg(analysis=analysis))
    assert "b = x³ = 8" not in texts(graph_svg(analysis=analysis))
    assert "b = x³ = 8" in texts(graph_svg(analysis=analysis, disclosure=Disclosure(keys=frozenset({"b"}))))
    assert "z = 32" not in texts(graph_svg(analysis=analysis))  # z = 4·b would give b away
    assert "x = 2" in texts(graph_svg(analysis=analysis))


def test_it_draws_detach_cuts_dashed_grey_and_the_legend_names_wrong_missing_detached() -> None:
    dot = graph_dot(analysis=seed_analysis("detach"))
    cut = next(line for line in dot.splitlines() if "detach: no gradient" in line)
    assert 'style="dashed"' in cut and f'color="{DETACHED}"' in cut
    assert "not tracked" in dot
    for words in ("the edge you got wrong", "a path you left out", "detached, no gradient"):
        assert words in dot


def test_missing_edges_are_dashed_orange() -> None:
    analysis = seed_analysis("visual-walkthrough")
    missing = diagnose_numeric(analysis=analysis, part="x.grad", answer=4.0).highlight
    dot = graph_dot(analysis=analysis, highlight=missing)
    dashed_orange = [line for line in dot.splitlines() if f'color="{MISSING}"' in line and 'style="dashed"' in line]
    assert len(dashed_orange) == 2  # x → mul and mul → add


MLP = """
torch.manual_seed(0)
xs = [torch.tensor(v) for v in x0]
def neuron(inputs):
    s = torch.zeros((), requires_grad=True)
    for i in inputs:
        s = s + torch.randn((), requires_grad=True) * i
    return torch.tanh(s)
h1 = [neuron(xs) for _ in range(5)]
h2 = [neuron(h1) for _ in range(5)]
L = (neuron(h2) - 1.0) ** 2
L.backward()
"""


def test_a_150_node_mlp_keeps_node_values_but_drops_edge_labels_and_says_so() -> None:
    analysis = analyze_program(program=MLP, params={"x0": [1.0, 2.0, 3.0]}, parts=[])
    assert FULL_DETAIL < 150 <= len(analysis.graph.nodes) <= NODE_DETAIL
    dot = graph_dot(analysis=analysis, disclosure=EVERYTHING)
    assert f"{len(analysis.graph.nodes)} nodes: only the names and values of the nodes are drawn" in legend(dot)
    drawn = [line for line in dot.splitlines() if not line.startswith("  graph")]
    assert not [line for line in drawn if "←" in line or "∂L/∂" in line and "->" in line]
    assert [line for line in drawn if ".grad = " in line]  # the gradient arriving at each leaf stays


def test_a_graph_past_the_detail_limit_draws_names_only() -> None:
    program = ("x = torch.tensor(xs, requires_grad=True)\nh = x\n"
               "for _ in range(70):\n    h = torch.tanh(h * 0.9 + 0.1)\nL = h.sum()\nL.backward()\n")
    analysis = analyze_program(program=program, params={"xs": [0.5, -0.5]}, parts=["x.grad"])
    assert len(analysis.graph.nodes) > NODE_DETAIL
    dot = graph_dot(analysis=analysis, disclosure=EVERYTHING)
    assert "only the names of the nodes are drawn" in legend(dot)
    drawn = [line for line in dot.splitlines() if not line.startswith("  graph")]
    assert not [line for line in drawn if "←" in line or "∂" in line or " = " in line.split("label=")[-1]]


def test_it_escapes_labels_so_they_cannot_break_the_dot_text() -> None:
    assert picture.quoted('a"b\\N\nc') == '"a\\"b\\\\N\\nc"'
    dot = graph_dot(analysis=seed_analysis("dead-relu"), title='evil" ] ; x -> y [label="</font><b>')
    assert dot.splitlines()[0] == 'digraph "evil\\" ] ; x -> y [label=\\"</font><b>" {'
    assert "evil\" ] ; x -&gt; y [label=\"&lt;/font&gt;&lt;b&gt;" in dot


@needs_dot
def test_it_renders_a_deterministic_svg_with_a_title() -> None:
    analysis = seed_analysis("detach")
    highlight = diagnose_numeric(analysis=analysis, part="x.grad", answer=12.0).highlight
    first = graph_svg(analysis=analysis, highlight=highlight)
    assert first.lstrip().startswith("<?xml") and "<svg" in first
    assert "<title>Computational graph of z</title>" in first
    picture.render_svg.cache_clear()  # Graphviz itself again, not the remembered picture
    assert graph_svg(analysis=analysis, highlight=highlight) == first


def test_it_says_clearly_when_graphviz_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    picture.render_svg.cache_clear()  # an earlier test may have drawn this picture
    monkeypatch.setattr(picture.shutil, "which", lambda name: None)
    with pytest.raises(GraphvizMissing, match="Graphviz is not installed"):
        graph_svg(analysis=seed_analysis("dead-relu"))


@needs_dot
def test_a_picture_asked_for_again_runs_graphviz_once(monkeypatch: pytest.MonkeyPatch) -> None:
    picture.render_svg.cache_clear()
    runs = []
    real_run = picture.subprocess.run

    def counting_run(*args: object, **kwargs: object) -> object:
        runs.append(args)
        return real_run(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(picture.subprocess, "run", counting_run)
    first = graph_svg(analysis=walkthrough(), disclosure=EVERYTHING)
    again = [graph_svg(analysis=walkthrough(), disclosure=EVERYTHING) for _ in range(20)]
    assert len(runs) == 1 and all(svg == first for svg in again)
    graph_svg(analysis=walkthrough(), disclosure=Disclosure(keys=frozenset()))  # another picture: drawn afresh
    assert len(runs) == 2


def test_a_negative_constant_is_added_or_taken_away_as_a_student_writes_it() -> None:
    program = ("x = torch.tensor(2.0, requires_grad=True)\nc = -0.4\ny = x - c\nz = x + c\nw = y * z + (x - (-3.0))\n"
               "w.backward()\n")
    formulas = set(analyze_program(program=program, params={}, parts=["x.grad"]).node_formulas.values())
    assert {"x + 0.4", "x − 0.4", "x + 3"} <= formulas
    assert not any("- -" in formula or "− -" in formula or "+ -" in formula for formula in formulas)
