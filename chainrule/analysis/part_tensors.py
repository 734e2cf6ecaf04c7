"""Part keys (`x.grad`, `w`, `layer.weight.grad`) and reading their reference
values from the namespace a program left behind. Keys are validated by a
pattern and resolved with getattr on public names only, never evaluated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from chainrule.analysis.tensors import tensor_to_value
from chainrule.errors import AnalysisError
from chainrule.model import Graph, Highlight, Hypothesis, PartReference
from chainrule.part_keys import is_tensor_path, split_gradient_key
from chainrule.values import Value, is_finite_value, shape_of


@dataclass(frozen=True)
class PartKey:
    text: str
    tensor: str  # dotted variable path, e.g. "x" or "layer.weight"
    reads_grad: bool


def parse_part_key(text: str) -> PartKey:
    if not is_tensor_path(text):
        raise AnalysisError(f"part {text!r} is not of the form name, name.attribute or name.grad")
    tensor, reads_grad = split_gradient_key(text)
    return PartKey(text, tensor, reads_grad)


def resolve(namespace: dict[str, Any], dotted: str) -> Any:
    head, *rest = dotted.split(".")
    if head not in namespace:
        raise AnalysisError(f"the program defines no variable {head!r}")
    found = namespace[head]
    for attribute in rest:
        if not hasattr(found, attribute):
            raise AnalysisError(f"{dotted!r}: {type(found).__name__} has no attribute {attribute!r}")
        found = getattr(found, attribute)
    return found


def plain_value(found: Any, where: str) -> Value:
    if found is None:
        return None
    if isinstance(found, torch.Tensor):
        if found.is_complex():
            raise AnalysisError(f"{where} is complex; only real values can be graded")
        value: Value = tensor_to_value(found)
    elif isinstance(found, (int, float)) and not isinstance(found, bool):
        value = float(found)
    else:
        raise AnalysisError(f"{where} is a {type(found).__name__}, not a tensor or a number")
    if not is_finite_value(value):
        raise AnalysisError(f"{where} is not finite ({value}); the reference program needs other numbers")
    return value


def read_part(namespace: dict[str, Any], key: PartKey) -> PartReference:
    holder = resolve(namespace, key.tensor)
    if key.reads_grad and not isinstance(holder, torch.Tensor):
        raise AnalysisError(f"{key.tensor!r} is a {type(holder).__name__}, so it has no .grad")
    found = holder.grad if key.reads_grad else holder
    value = plain_value(found, key.text)
    tensor = holder if isinstance(holder, torch.Tensor) else None
    return PartReference(
        key=key.text,
        value=value,
        shape=shape_of(value) if not isinstance(found, torch.Tensor) else list(found.shape),
        tensor=key.tensor,
        reads_grad=key.reads_grad,
        requires_grad=None if tensor is None else bool(tensor.requires_grad),
        is_leaf=None if tensor is None else bool(tensor.is_leaf),
    )


def none_part_hypotheses(reference: PartReference, graph: Graph) -> list[Hypothesis]:
    """A part whose right answer is None: any number is the `untracked_leaf`
    mistake (never tracked, not a leaf, or never reached: the words say which)."""
    if reference.requires_grad is False:
        reason = "requires_grad_false"
    elif reference.is_leaf is False:
        reason = "not_a_leaf"
    else:
        reason = "not_in_graph"
    nodes = [n.id for n in graph.nodes if n.name == reference.tensor and n.kind == "leaf"]
    return [
        Hypothesis("untracked_leaf", None, [], Highlight(nodes=nodes),
                   {"reason": reason, "tensor": reference.tensor}, any_number=True)
    ]
