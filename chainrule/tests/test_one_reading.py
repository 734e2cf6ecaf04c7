"""One diagnosis, stated plainly: no list of other causes appended; a second reading only where the
evidence supports it exactly as well, and then with how to tell the two apart."""

from __future__ import annotations

import pytest

from chainrule import diagnose_numeric
from chainrule.diagnosis.messages import FeedbackContext, hypothesis_message
from chainrule.diagnosis.numeric import second_reading
from chainrule.model import Highlight, Hypothesis
from chainrule.tests.seeds import SEEDS, seed_analysis

HEDGES = ("could also come from", "The same answer could")


def test_the_walkthroughs_missing_path_is_told_alone() -> None:
    """4 is also b = x², a forward value: less likely, so not appended as "could also come from …"."""
    diagnosis = diagnose_numeric(analysis=seed_analysis("visual-walkthrough"), part="x.grad", answer=4.0)
    assert diagnosis.kind == "missing_path" and "forward_value" in diagnosis.also
    assert not any(hedge in diagnosis.message for hedge in HEDGES)
    assert "forward value" not in diagnosis.message and "It could equally be" not in diagnosis.message


@pytest.mark.parametrize("slug", sorted(SEEDS))
def test_no_seed_diagnosis_lists_alternatives(slug: str) -> None:
    analysis = seed_analysis(slug)
    for part in analysis.parts:
        for hypothesis in analysis.hypotheses.get(part, []):
            if hypothesis.any_number:
                continue
            message = diagnose_numeric(analysis=analysis, part=part, answer=hypothesis.value).message
            assert not any(hedge in message for hedge in HEDGES), message
            assert message.count("It could equally be") <= 1, message
            assert "It could equally be" not in message or "To tell which" in message, message


def path_slip(kind: str, path: list[str]) -> Hypothesis:
    return Hypothesis(kind, 4.0, [path], Highlight(), {})


CONTEXT = FeedbackContext(part="x.grad", tensor="x", outputs=["z"],
                          leaf_paths=[["x", "mul", "add", "z"], ["x", "add", "z"]])


def test_a_reading_ranked_lower_is_not_a_second_reading() -> None:
    chosen = path_slip("missing_path", ["x", "mul", "add", "z"])
    lower = Hypothesis("forward_value", 4.0, [], Highlight(), {"name": "b", "node_kind": "op"})
    assert second_reading(chosen, [chosen, lower]) is None


def test_an_equally_likely_reading_is_told_with_how_to_tell_them_apart() -> None:
    chosen = path_slip("missing_path", ["x", "mul", "add", "z"])
    other = path_slip("missing_path", ["x", "add", "z"])
    second = second_reading(chosen, [chosen, other])
    assert second is other
    message = hypothesis_message(chosen, CONTEXT, second)
    assert message.count("It could equally be") == 1
    assert "your x.grad leaves out x → add → z" in message
    assert "To tell which, work out the path x → mul → add → z and the path x → add → z" in message
