"""The picture tells one story with its exercise and can be read by everyone: x·x is two factors
whose paths add (as the multiple-paths choice part asks), a program that passes no seed shows none,
every colour reads at WCAG AA contrast, and the picture in words follows the same disclosure."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import pytest

from chainrule import Disclosure, diagnose_numeric, graph_dot, graph_svg
from chainrule.picture.graph import DETACHED, FLOW, FORWARD, INK, MISSING, WRONG
from chainrule.picture.words import graph_words
from chainrule.tests.seeds import seed_analysis

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
SVG = "{http://www.w3.org/2000/svg}"
EVERYTHING = Disclosure(everything=True)
UNTRACKED_FILL = "#f0f0f0"


def texts(svg: str) -> list[str]:
    return ["".join(element.itertext()).strip() for element in ET.fromstring(svg).iter(f"{SVG}text")]


def contrast(first: str, second: str) -> float:
    def luminance(colour: str) -> float:
        channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    light, dark = sorted((luminance(first), luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


@needs_dot
def test_x_times_x_is_two_factor_edges_whose_gradients_add_up_to_x_grad() -> None:
    analysis = seed_analysis("multiple-paths")  # z = x·x + x at x = 3
    shown = texts(graph_svg(analysis=analysis, disclosure=EVERYTHING))
    assert "first factor: ∂(x·x)/∂x = x = 3" in shown and "second factor: ∂(x·x)/∂x = x = 3" in shown
    assert shown.count("← 3") == 2 and "← 6" not in shown  # each factor sends 1 · x = 3 back
    assert "x.grad = 3 + 3 + 1 = 7" in shown
    words = graph_words(analysis=analysis, disclosure=EVERYTHING)["paths"]
    assert words == ["x → mul → add → z (first factor): contributes 3",
                     "x → mul → add → z (second factor): contributes 3", "x → add → z: contributes 1"]


def test_x_times_x_counted_once_leaves_the_second_factors_path_out() -> None:
    analysis = seed_analysis("multiple-paths")
    diagnosis = diagnose_numeric(analysis=analysis, part="x.grad", answer=4.0)  # 3 + 1: one factor
    edge = diagnosis.highlight.wrong_edges[0]
    notes = {edge: f"✗ you used {diagnosis.detail['used']}; right: {diagnosis.detail['right']}"}
    dot = graph_dot(analysis=analysis, highlight=diagnosis.highlight, edge_notes=notes)
    copies = [line for line in dot.splitlines() if line.startswith(f'  "{edge[0]}" -> "{edge[1]}"')]
    assert len(copies) == 2
    assert "first factor: ∂(x·x)/∂x = x" in copies[0] and MISSING not in copies[0]
    assert f'color="{MISSING}"' in copies[1] and "missing: second factor: ∂(x·x)/∂x = x" in copies[1]
    assert WRONG not in "".join(copies)  # the student counted the first factor right
    marks = graph_words(analysis=analysis, highlight=diagnosis.highlight, edge_notes=notes)["marks"]
    assert marks == ["Missing: the second factor's path through x → (x·x)"]


def test_a_program_that_passes_no_seed_shows_none_even_after_two_backward_calls() -> None:
    dot = graph_dot(analysis=seed_analysis("accumulation"), disclosure=EVERYTHING)
    assert "seed = 2" not in dot
    assert "∂y/∂y = 1 in each of 2 backward calls" in dot
    assert "seed = [1, 1, 1]" in graph_dot(analysis=seed_analysis("non-scalar"), disclosure=EVERYTHING)


def test_every_colour_on_the_picture_reads_at_4_5_to_1_on_white_and_on_the_untracked_grey() -> None:
    for colour in (FORWARD, FLOW, WRONG, MISSING, DETACHED, INK):
        assert contrast(colour, "#ffffff") >= 4.5, colour
        assert contrast(colour, UNTRACKED_FILL) >= 4.5, colour
    assert f'fillcolor="{UNTRACKED_FILL}"' in graph_dot(analysis=seed_analysis("linear-layer"))


def test_the_picture_in_words_lists_values_and_contributions_within_the_same_disclosure() -> None:
    analysis = seed_analysis("visual-walkthrough")
    everything = graph_words(analysis=analysis, disclosure=EVERYTHING)
    assert "x = 2 (input); gradient: x.grad = 3 + 4 = 7" in everything["nodes"]
    assert "x → pow → add → z: contributes 4" in everything["paths"]
    hidden = graph_words(analysis=analysis, disclosure=Disclosure(keys=frozenset({"y.grad"})))
    assert "y = 3 (input); gradient: y.grad = 2" in hidden["nodes"] and "x = 2 (input)" in hidden["nodes"]
    assert "y → mul → add → z: contributes 2" in hidden["paths"]
    assert "x → pow → add → z: its contribution is for you to find" in hidden["paths"]
    assert not [line for line in hidden["nodes"] + hidden["paths"] if "7" in line or "contributes 4" in line]


def test_a_clone_where_the_exercise_detaches_is_called_clone_on_the_path_line_and_the_picture() -> None:
    from dataclasses import replace

    from chainrule.result import diagnosis_document

    analysis = seed_analysis("detach")
    found = diagnose_numeric(analysis=analysis, part="x.grad", answer=12.0)  # the path through b counted
    assert found.kind == "extra_path" and [name for path in found.paths for name in path if name == "detach"]
    cloned = replace(found, detail={**found.detail, "code": {"finding": "clone", "line": 3}})
    document = diagnosis_document(cloned)
    assert document["paths"] == [["clone" if n == "detach" else n for n in path] for path in found.paths]
    assert not [name for path in document["paths"] for name in path if name == "detach"]
    assert diagnosis_document(found)["paths"] == found.paths  # a plain extra path keeps the exercise's words
    edge = found.highlight.wrong_edges[0]
    note = "✗ clone() keeps the graph: gradient flows back here (detach() would stop it)"
    assert note in graph_dot(analysis=analysis, highlight=found.highlight, edge_notes={edge: note})
