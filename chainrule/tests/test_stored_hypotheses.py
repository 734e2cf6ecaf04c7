"""An analysis is stored once per variant and read for every answer: a wrong local derivative deep in
a large graph changes a few entries of a large gradient, so such a prediction is stored as its
changes to the right gradient, and reads back as the same whole value."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chainrule import analyze_program
from chainrule.diagnosis.numeric import diagnose_numeric
from chainrule.model import Analysis

# A layer of four neurons written one by one: a slip inside neuron j changes row j of W.grad only.
PROGRAM = """
x = torch.tensor([0.5, -1.0, 2.0])
W = torch.tensor(w, requires_grad=True)
h = torch.stack([torch.tanh((W[j] * x).sum()) for j in range(4)])
L = (h * torch.tensor([1.0, -2.0, 0.5, 3.0])).sum()
L.backward()
"""
PARAMS = {"w": [[0.1, -0.2, 0.3], [0.4, 0.5, -0.6], [-0.7, 0.8, 0.9], [0.2, -0.1, 0.05]]}


@pytest.fixture(scope="module")
def analysis() -> Analysis:
    return analyze_program(program=PROGRAM, params=PARAMS, parts=["W.grad"])


def _stored(analysis: Analysis) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(analysis.to_json()))
    return data


def test_a_slip_in_one_neuron_is_stored_as_its_row_and_reads_back_whole(analysis: Analysis) -> None:
    stored = _stored(analysis)
    items = stored["hypotheses"]["W.grad"]
    sparse = [item for item in items if "changes" in item]
    assert sparse, "no prediction stored as changes"
    assert all(len(item["changes"]) <= 6 for item in sparse)  # at most half of the 12 entries
    read = Analysis.from_json(stored)
    assert [h.value for h in read.hypotheses["W.grad"]] == [h.value for h in analysis.hypotheses["W.grad"]]
    assert json.dumps(read.to_json()) == json.dumps(stored)  # stable: stored again, the same document


def test_an_answer_with_one_slip_is_diagnosed_the_same_from_the_stored_document(analysis: Analysis) -> None:
    wrong = next(h for h in analysis.hypotheses["W.grad"] if h.kind == "wrong_local_derivative")
    read = Analysis.from_json(_stored(analysis))
    before = diagnose_numeric(analysis=analysis, part="W.grad", answer=wrong.value)
    after = diagnose_numeric(analysis=read, part="W.grad", answer=wrong.value)
    assert before.kind == after.kind == "wrong_local_derivative"
    assert before.detail.get("edge") == after.detail.get("edge")


def test_a_document_with_every_value_whole_is_still_read(analysis: Analysis) -> None:
    """Analyses stored before this form keep grading after an upgrade."""
    old = _stored(analysis)
    old["version"] = 1
    for items in old["hypotheses"].values():
        for item, whole in zip(items, analysis.hypotheses["W.grad"], strict=True):
            item.pop("changes", None)
            item["value"] = whole.value
    read = Analysis.from_json(old)
    assert [h.value for h in read.hypotheses["W.grad"]] == [h.value for h in analysis.hypotheses["W.grad"]]


@pytest.mark.parametrize("changes", [[[12, 1.0]], [[-1, 1.0]], [[0, "1"]], [[0, True]], [[0]], "0:1", [[1.5, 2.0]]])
def test_a_malformed_change_is_refused_not_read_as_a_value(analysis: Analysis, changes: Any) -> None:
    """The document comes back from the sandbox: an index outside the gradient, a negative one (which
    numpy would read from the end) or an entry that is not a number is an error, never a prediction."""
    stored = _stored(analysis)
    item = next(item for item in stored["hypotheses"]["W.grad"] if "changes" in item)
    item["changes"] = changes
    with pytest.raises(ValueError):
        Analysis.from_json(stored)


def test_changes_to_a_part_the_document_does_not_have_are_refused(analysis: Analysis) -> None:
    stored = _stored(analysis)
    stored["hypotheses"]["b.grad"] = [next(item for item in stored["hypotheses"]["W.grad"] if "changes" in item)]
    with pytest.raises(ValueError):
        Analysis.from_json(stored)


def test_a_small_document_that_would_expand_to_millions_of_numbers_is_refused(analysis: Analysis) -> None:
    """Changes make a document small: 30,000 predictions of "no change" to a 1,000-entry reference are
    a few MB of JSON but 30 million numbers once read. The document comes from the sandbox, where a
    hostile reference program could write it: it is refused, not expanded."""
    stored = _stored(analysis)
    stored["parts"]["W.grad"]["value"] = [[0.5] * 100] * 10
    template = next(item for item in stored["hypotheses"]["W.grad"] if "changes" in item)
    stored["hypotheses"]["W.grad"] = [{**template, "changes": []}] * 30_000
    with pytest.raises(ValueError, match="expands to more than"):
        Analysis.from_json(stored)


def test_a_document_that_lists_every_route_is_still_read(analysis: Analysis) -> None:
    """Before version 3 a path kept each route's node ids; it reads back with the same edges."""
    old = _stored(analysis)
    old["version"] = 2
    routes = {}
    for leaf, paths in old["paths"].items():
        for path in paths:
            edges = path.pop("edges")
            path["routes"] = [[source, target] for source, target in edges]  # each edge a route of its own
            routes[leaf, tuple(path["names"])] = [tuple(edge) for edge in edges]
    read = Analysis.from_json(old)
    assert {(leaf, tuple(p.names)): p.edges for leaf, ps in read.paths.items() for p in ps} == routes
    assert [h.value for h in read.hypotheses["W.grad"]] == [h.value for h in analysis.hypotheses["W.grad"]]
