"""What a viewer may not see on the picture yet, decided in one place: a gradient asked for by a part
whose answer is not disclosed to this viewer, every gradient downstream of it (from which, with the
local derivatives, it would follow), and a forward value that is itself an undisclosed answer, with
the values computed from it. Local derivatives stay: they are the rule of each machine, which the
feedback teaches anyway."""

from __future__ import annotations

from dataclasses import dataclass, field

from chainrule.model import Analysis


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


def hidden_for(analysis: Analysis, disclosure: Disclosure) -> Hidden:
    hidden = Hidden()
    downstream = _downstream(analysis)
    for key, part in analysis.parts.items():
        if disclosure.shows(key):
            continue
        nodes = [node.id for node in analysis.graph.nodes if part.tensor in (node.name, node.tensor_name)
                 and (node.kind != "leaf" or node.tracked or not part.reads_grad)]
        if part.reads_grad:
            hidden.grads.update(node for start in nodes for node in downstream.get(start, {start}))
        else:  # a forward value asked for, and every value computed from it (z = 4·b gives b away)
            nodes += [n.id for n in analysis.graph.nodes if n.kind == "output" and n.name == part.tensor]
            hidden.values.update(node for start in nodes for node in downstream.get(start, {start}))
    return hidden


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
