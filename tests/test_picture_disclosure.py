"""Under a disclosure that does not show a part, the picture gives that part's answer away nowhere:
over every shipped catalog assignment, the extra catalog and both corpora, for each part and each
typical wrong answer (the corpus's cases, and the engine's own typical mistakes), no text on the
rendered SVG states the part's expected value, and none lets it follow in one step (a slope on an
edge leaving the part's node times a shown gradient, or two such slopes added)."""

from __future__ import annotations

import functools
import re
import shutil
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from itertools import combinations
from pathlib import Path

import pytest

from assignments.part_config import reference_keys
from catalog.spec import spec_from_file
from chainrule import Analysis, Disclosure, Highlight, analyze_program, diagnose_numeric, graph_svg
from chainrule.picture.graph import FLOW
from chainrule.result import diagnosis_document
from chainrule.values import Value, flatten
from grader.pictures import _edge_notes

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = [ROOT / "assignments/catalog", ROOT / "tests/catalog_extra", ROOT / "tests/corpus/assignments",
           ROOT / "tests/corpus_heldout/assignments"]
FILES = sorted(path for folder in FOLDERS for path in folder.glob("*.toml"))
SVG = "{http://www.w3.org/2000/svg}"
MISTAKES_PER_PART = 6  # the engine's likeliest typical mistakes, besides the corpus's own cases
NUMBER = r"[-−]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"
STATED = re.compile(rf"^(?:\[[^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*\]|{NUMBER})$")

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")


@functools.cache
def analysis_of(path: Path) -> Analysis:
    spec = spec_from_file(path)
    keys = reference_keys([(part.key, part.config) for part in spec.parts])
    return analyze_program(program=spec.reference, params=spec.params, parts=keys)


def wrong_answers(path: Path, analysis: Analysis, key: str) -> Iterator[Value]:
    cases = path.parent.parent / "cases" / path.name
    if cases.exists():
        from chainrule import parse_numeric

        for case in tomllib.loads(cases.read_text())["wrong"]:
            if case["part"] == key:
                yield parse_numeric(case["answer"])
    seen: list[Value] = []
    for hypothesis in analysis.hypotheses.get(key, []):
        if not hypothesis.any_number and hypothesis.value is not None and hypothesis.value not in seen:
            seen.append(hypothesis.value)
            yield hypothesis.value
            if len(seen) == MISTAKES_PER_PART:
                return


def stated_numbers(text: str) -> list[Value]:
    """The numbers a label states: each piece between `=`, `;`, `:`, `←` and `+` that is a number or a
    list, as printed (formulas such as `2·x` state none)."""
    pieces = re.split(r" = | \+ | − |; |: |← |\(|\)", text)
    found: list[Value] = []
    for piece in (piece.strip().replace("−", "-").replace("≈0", "0") for piece in pieces):
        if STATED.match(piece):
            numbers: list[Value] = [float(n) for n in re.findall(NUMBER, piece)]
            found.append(numbers if piece.startswith("[") else numbers[0])
    return found


def broadcast(first: Value, second: Value) -> list[tuple[float, float]]:
    """Entry pairs of two printed values, a single number standing for every entry; none when the
    shapes do not meet."""
    left, right = flatten(first), flatten(second)
    if len(left) == 1:
        left = left * len(right)
    if len(right) == 1:
        right = right * len(left)
    return list(zip(left, right, strict=True)) if len(left) == len(right) else []


def same(shown: Value, expected: Value) -> bool:
    pairs = broadcast(shown, expected)
    return bool(pairs) and all(abs(a - b) <= 1e-6 + 1e-3 * abs(b) for a, b in pairs)


def product(first: Value, second: Value) -> Value:
    return [a * b for a, b in broadcast(first, second)] or None


def total(first: Value, second: Value) -> Value:
    return [a + b for a, b in broadcast(first, second)] or None


class Picture:
    """The rendered SVG's texts: by node (its id, and whether the text is red flow) and by edge."""

    def __init__(self, svg: str) -> None:
        self.nodes: list[tuple[str, str, str]] = []  # (node id, fill, text)
        self.edges: list[tuple[str, str, str]] = []  # (source, target, text)
        for group in ET.fromstring(svg).iter(f"{SVG}g"):
            kind = group.get("class")
            if kind not in ("node", "edge"):
                continue
            title = "".join(next(group.iter(f"{SVG}title")).itertext())
            for element in group.iter(f"{SVG}text"):
                text = "".join(element.itertext()).strip()
                if kind == "node":
                    self.nodes.append((title, element.get("fill", ""), text))
                else:
                    source, _, target = title.partition("->")
                    self.edges.append((source, target, text))

    def giveaways(self, *, analysis: Analysis, key: str, exempt: set[str]) -> list[str]:
        """Texts that state `key`'s expected value or give it in one step."""
        expected = analysis.parts[key].value
        leaves = {node.id for node in analysis.graph.nodes if node.kind == "leaf"}
        checked = [text for node, fill, text in self.nodes
                   if not (node in leaves and fill.lower() != FLOW) and node not in exempt]
        checked += [text for _, _, text in self.edges]
        found = [text for text in checked if any(same(number, expected) for number in stated_numbers(text))]
        starts = part_nodes(analysis, key)
        slopes = [(text, number) for source, _, text in self.edges if source in starts
                  for number in stated_numbers(text)]
        flow = [(text, number) for node, fill, text in self.nodes if fill.lower() == FLOW and node not in exempt
                for number in stated_numbers(text)]
        found += [f"{text} × {other}" for text, number in slopes for other, gradient in flow
                  if same(product(number, gradient), expected)]
        found += [f"{a} + {b}" for (a, x), (b, y) in combinations(slopes, 2) if same(total(x, y), expected)]
        return found


def part_nodes(analysis: Analysis, key: str) -> set[str]:
    part = analysis.parts[key]
    return {node.id for node in analysis.graph.nodes if part.tensor in (node.name, node.tensor_name)}


def pictures(path: Path) -> Iterator[tuple[str, str, Picture, set[str]]]:
    """For each part and wrong answer: the picture under the default disclosure and under one that
    shows every other part (whose own gradients are then the student's to see)."""
    analysis = analysis_of(path)
    for key, part in analysis.parts.items():
        if part.value is None:
            continue
        others = frozenset(analysis.parts) - {key}
        known = {node for other in others if analysis.parts[other].reads_grad for node in part_nodes(analysis, other)}
        drawn: set[str] = set()
        for answer in wrong_answers(path, analysis, key):
            diagnosis = diagnose_numeric(analysis=analysis, part=key, answer=answer)
            if diagnosis.correct:
                continue
            highlight = Highlight.from_json(diagnosis.highlight.to_json()) if hasattr(diagnosis.highlight, "to_json") \
                else diagnosis.highlight
            for disclosure, exempt in ((Disclosure(), set()), (Disclosure(keys=others), known)):
                notes = _edge_notes({"diagnosis": diagnosis_document(diagnosis)}, highlight, disclosure)
                svg = graph_svg(analysis=analysis, highlight=highlight, title=f"Where {key} went wrong",
                                disclosure=disclosure, edge_notes=notes)
                if svg in drawn:
                    continue
                drawn.add(svg)
                yield key, f"{answer!r} ({diagnosis.kind})", Picture(svg), exempt


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_no_label_gives_an_undisclosed_part_away(path: Path) -> None:
    analysis = analysis_of(path)
    failures = [(key, answer, found) for key, answer, picture, exempt in pictures(path)
                if (found := picture.giveaways(analysis=analysis, key=key, exempt=exempt))]
    assert not failures, failures


def test_the_linear_layers_wrong_edge_gives_the_rule_and_numbers_return_with_everything() -> None:
    analysis = analysis_of(ROOT / "assignments/catalog/linear-layer.toml")
    diagnosis = diagnose_numeric(analysis=analysis, part="w.grad", answer=[0.5, -0.3])  # used w for x
    document = {"diagnosis": diagnosis_document(diagnosis)}
    notes = _edge_notes(document, diagnosis.highlight, Disclosure())
    texts = [text for *_, text in Picture(graph_svg(analysis=analysis, highlight=diagnosis.highlight,
                                                    edge_notes=notes)).edges]
    assert "✗ you used w here; right: ∂(w·x)/∂w = x" in texts, texts
    all_notes = _edge_notes(document, diagnosis.highlight, Disclosure(everything=True))
    everything = Picture(graph_svg(analysis=analysis, highlight=diagnosis.highlight, edge_notes=all_notes,
                                   disclosure=Disclosure(everything=True)))
    assert "✗ you used w; right: ∂(w·x)/∂w = x = [1, 2]" in [text for *_, text in everything.edges]
    assert [text for _, _, text in everything.nodes if text.startswith("w.grad")] == ["w.grad = [1, 2]"]


def test_the_checker_finds_a_stated_answer_and_a_one_step_product() -> None:
    analysis = analysis_of(ROOT / "assignments/catalog/detach.toml")
    svg = graph_svg(analysis=analysis, disclosure=Disclosure(everything=True))
    assert Picture(svg).giveaways(analysis=analysis, key="x.grad", exempt=set())  # "x.grad = 4", "∂z/∂x = b = 4"
    assert stated_numbers("x.grad = 3 + 4 = 7") == [3.0, 4.0, 7.0]
    assert stated_numbers("∂b/∂x = 2·x") == [] and stated_numbers("seed = [1, 1, 1]") == [[1.0, 1.0, 1.0]]
