"""Part configuration is typed: validated once when saved, read back as a dataclass everywhere."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from assignments.models import Assignment, Part
from assignments.part_config import (
    ChoiceConfig,
    CodeConfig,
    SymbolicConfig,
    config_load,
    config_parse,
    reference_keys,
)

PARAMS = {"x0": 2.0, "y0": 3.0}


def _fail(name: str, problem: str) -> Exception:
    return ValueError(f"{name}: {problem}")


@pytest.mark.parametrize(("kind", "authored"), [
    ("symbolic", {"variables": {"x": "x0", "y": "y0"}, "of": "x.grad", "formula": "y + 2*x"}),
    ("code", {"mode": "function", "function": "grad_z", "args": ["x0", "y0"], "returns": ["x.grad", "y.grad"],
              "forbid_autograd": True}),
    ("code", {"mode": "program", "reads": ["x.grad"], "vary": []}),
    ("code", {"mode": "program", "reads": ["x.grad"], "backward_calls": 2, "forbid": [".data", "no_grad"]}),
    ("choice", {"options": ["rising", "falling"], "answer": ["rising"], "feedback": {"falling": "No."}}),
])
def test_stored_json_is_what_the_author_wrote_and_reads_back_equal(kind: str, authored: dict[str, Any]) -> None:
    parsed = config_parse(kind, authored, params=PARAMS, fail=_fail)
    assert parsed.to_json() == authored
    assert config_load(kind, parsed.to_json()) == parsed


@pytest.mark.parametrize(("authored", "problem"), [
    ({"mode": "program", "reads": ["x.grad"], "backward_calls": 0},
     "config.backward_calls: must be a whole number of backward() calls from 1 to 1000, got 0"),
    ({"mode": "program", "reads": ["x.grad"], "backward_calls": "2"},
     "config.backward_calls: must be a whole number of backward() calls from 1 to 1000, got '2'"),
    ({"mode": "program", "reads": ["x.grad"], "forbid": ["autograd"]},
     "config.forbid: must list constructs from torch.autograd.grad, torch.func, .data, detach, no_grad, "
     "retain_graph; got 'autograd'"),
    ({"mode": "fix", "reads": ["x.grad"], "forbid": ".data"},
     "config.forbid: must list constructs from torch.autograd.grad, torch.func, .data, detach, no_grad, "
     "retain_graph; got '.data'"),
    ({"mode": "program", "reads": ["x.grad"], "forbid": ["detach", "detach"]},
     "config.forbid: lists the same construct twice"),
    ({"mode": "function", "function": "f", "args": ["x0"], "returns": ["x.grad"], "backward_calls": 1},
     "config.backward_calls: is a requirement of a program or fix part; a function part by hand uses "
     "forbid_autograd"),
])
def test_a_requirement_that_cannot_be_checked_is_refused_with_what_to_write(authored: dict[str, Any],
                                                                             problem: str) -> None:
    with pytest.raises(ValueError) as refused:
        config_parse("code", authored, params=PARAMS, fail=_fail)
    assert str(refused.value) == problem


def test_defaults_are_filled_in_once_not_at_every_read() -> None:
    config = config_load("code", {"mode": "function", "function": "f", "args": ["x0"], "returns": ["x.grad"]})
    assert isinstance(config, CodeConfig)
    assert (config.arg_type, config.forbid_autograd, config.shown_signature, config.by_hand) == (
        "float", False, "f(…)", False)
    program = config_load("code", {"mode": "program", "reads": ["x.grad"]})
    assert isinstance(program, CodeConfig) and program.vary is None  # vary = [] would mean "nothing varies"


def test_an_explicit_empty_vary_is_kept_apart_from_no_vary() -> None:
    config = config_parse("code", {"mode": "program", "reads": ["x.grad"], "vary": []}, params=PARAMS, fail=_fail)
    assert isinstance(config, CodeConfig) and config.vary == ()


def test_the_keys_read_from_the_reference_follow_each_kind() -> None:
    parts = [("x.grad", config_load("numeric", {})),
             ("dz_dx", config_load("symbolic", {"variables": {"x": "x0"}, "of": "y.grad"})),
             ("grad_z", config_load("code", {"mode": "function", "returns": ["x.grad", "w.grad"]})),
             ("which", config_load("choice", {"options": ["a", "b"], "answer": ["a"]}))]
    assert reference_keys(parts) == ["x.grad", "y.grad", "w.grad"]


def test_a_choice_answer_is_put_in_the_order_of_the_options() -> None:
    config = config_parse("choice", {"options": ["a", "b", "c"], "answer": ["c", "a"], "multiple": True},
                          params={}, fail=_fail)
    assert isinstance(config, ChoiceConfig) and config.answer == ("a", "c")


@pytest.mark.django_db
def test_a_part_reads_its_config_typed_and_refuses_the_wrong_kind() -> None:
    part = Assignment.objects.get(slug="visual-walkthrough").parts.get(key="dz_dx")
    assert isinstance(part.kind_config, SymbolicConfig) and part.symbolic.of == "x.grad"
    with pytest.raises(TypeError, match="symbolic part, not a code part"):
        _ = part.code


@pytest.mark.django_db
def test_saving_a_part_through_a_form_validates_its_config() -> None:
    assignment = Assignment.objects.get(slug="visual-walkthrough")
    part = Part(assignment=assignment, key="dz", kind="symbolic", config={"variables": {"x": "nope"}, "of": "x.grad"})
    with pytest.raises(ValidationError, match="config.variables.x"):
        part.clean()


@pytest.mark.django_db
def test_saving_a_part_refreshes_its_typed_config() -> None:
    part = Assignment.objects.get(slug="visual-walkthrough").parts.get(key="dz_dx")
    assert part.symbolic.of == "x.grad"
    part.config = {**part.config, "of": "y.grad"}
    part.save()
    assert part.symbolic.of == "y.grad"
