"""What a viewer may not see on the picture yet, decided in one place, as one rule for any graph.

For each answer not disclosed to this viewer:
- a gradient asked for: the gradient at its node and at every node downstream of it (from which,
  with the local derivatives, it would follow), and the number of every local derivative on those
  paths (its rule stays: `∂(w·x)/∂w = x`, so the student still has the chain rule to apply); and
  the gradient of any other node whose paths join those (it carries the same upstream gradient);
- a forward value asked for: that value and every value computed from it;
- and anywhere on the picture, no number equal to that answer (a seed, a slope off its paths, an
  intermediate value): the leaves' own values stay, they are the exercise's data.
A part the viewer may see keeps its own gradient even when another answer has the same number."""

from __future__ import annotations

from dataclasses import dataclass, field

from chainrule.model import Analysis
from chainrule.values import Value, flatten, numbers_close

# The picture prints five significant digits: a label within this of an answer states that answer.
PRINTED_REL_TOL = 1e-3
PRINTED_ABS_TOL = 1e-6


@dataclass(frozen=True)
class Disclosure:
    """Which reference answers this viewer may see: part keys as the analysis reads
    them (`x.grad`, `z`). The default discloses nothing."""

    everything: bool = False
    keys: frozenset[str] = frozenset()

    def shows(self, key: str) -> bool:
        return self.everything or key in self.keys


@dataclass
class Hidden:
    grads: set[str] = field(default_factory=set)  # node ids whose gradient is not shown
    values: set[str] = field(default_factory=set)  # node ids whose forward value is not shown
    paths: set[str] = field(default_factory=set)  # node ids whose outgoing slopes are shown without numbers
    answers: list[Value] = field(default_factory=list)  # undisclosed answers: no number may state one
    known: set[str] = field(default_factory=set)  # node ids whose gradient is a disclosed answer

    def tells(self, value: Value) -> bool:
        """Whether a number on the picture would state an undisclosed answer."""
        return any(_same_numbers(value, answer) for answer in self.answers)


def hidden_for(analysis: Analysis, disclosure: Disclosure) -> Hidden:
    hidden = Hidden()
    downstream = _downstream(analysis)
    for key, part in analysis.parts.items():
        nodes = [node.id for node in analysis.graph.nodes if part.tensor in (node.name, node.tensor_name)
                 and (node.kind != "leaf" or node.tracked or not part.reads_grad)]
        if disclosure.shows(key):
            hidden.known.update(nodes if part.reads_grad else [])
            continue
        if part.value is not None:
            hidden.answers.append(part.value)
        if part.reads_grad:
            reached = {node for start in nodes for node in downstream.get(start, {start})}
            hidden.grads.update(reached)
            hidden.paths.update(reached)
        else:  # a forward value asked for, and every value computed from it (z = 4·b gives b away)
            nodes += [n.id for n in analysis.graph.nodes if n.kind == "output" and n.name == part.tensor]
            hidden.values.update(node for start in nodes for node in downstream.get(start, {start}))
    # A sibling's gradient shares the hidden paths' upstream gradient (w2.grad = x2 · ∂L/∂(w2·x2), the
    # same ∂L/∂(…) that gives b.grad): it is hidden too, unless the viewer may see it anyway.
    shared = hidden.paths - {node.id for node in analysis.graph.nodes if node.kind == "output"}
    hidden.grads.update(node for node, reached in downstream.items() if node not in hidden.known and reached & shared)
    return hidden


def _same_numbers(shown: Value, answer: Value) -> bool:
    """The same numbers as printed (any nesting), or one number that is every entry of the other."""
    left, right = flatten(shown), flatten(answer)
    if not left or not right:
        return False
    if len(left) != len(right):
        if len(left) == 1:
            left = left * len(right)
        elif len(right) == 1:
            right = right * len(left)
        else:
            return False
    pairs = zip(left, right, strict=True)
    return all(numbers_close(a, b, rel_tol=PRINTED_REL_TOL, abs_tol=PRINTED_ABS_TOL) for a, b in pairs)


def _downstream(analysis: Analysis) -> dict[str, set[str]]:
    """Every node each node feeds (itself included): its gradient is built from theirs."""
    consumers: dict[str, list[str]] = {}
    for edge in analysis.graph.edges:
        if not edge.cut:
            consumers.setdefault(edge.source, []).append(edge.target)
    reached: dict[str, set[str]] = {}
    for node in analysis.graph.nodes:
        seen, stack = {node.id}, [node.id]
        while stack:
            for target in consumers.get(stack.pop(), []):
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        reached[node.id] = seen
    return reached
