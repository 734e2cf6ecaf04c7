"""Wrong beliefs about how .grad accumulates over several backward calls,
from what each call contributed: the last call only, the calls averaged, one
call counted twice, or a zero_() in the wrong place (every call summed, or
the sum restarted before another call than the program's)."""

from __future__ import annotations

from typing import Any

import numpy as np

from chainrule.analysis.call_inspection import CallEvidence
from chainrule.analysis.leaf_evidence import live_calls
from chainrule.analysis.tensors import tensor_to_array

Belief = tuple[dict[str, Any], np.ndarray]


def _contribution(item: CallEvidence, leaf: str) -> np.ndarray | None:
    grads = [tensor_to_array(path.grad) for path in item.paths if path.leaf == leaf]
    return np.sum(grads, axis=0) if grads else None


def accumulation_beliefs(evidence: list[CallEvidence], leaf: str) -> list[Belief]:
    calls = [item for item in evidence if leaf in item.leaves]
    if len(calls) < 2:
        return []
    contributions = [_contribution(item, leaf) for item in calls]
    if any(item is None for item in contributions):
        return []
    every: list[np.ndarray] = [item for item in contributions if item is not None]
    live = {id(item) for item in live_calls(evidence, leaf)}
    counted = [c for item, c in zip(calls, every, strict=True) if id(item) in live]
    total = len(calls)
    since = total - len(counted) + 1  # the call from which the program's .grad sums
    summed = np.sum(counted, axis=0)
    beliefs: list[Belief] = [
        ({"belief": "last_only", "calls": total, "counted": 1}, every[-1]),
        ({"belief": "first_only", "calls": total, "counted": 1}, every[0]),
        ({"belief": "doubled", "calls": total, "counted": len(counted) + 1}, summed + every[-1]),
        ({"belief": "total_doubled", "calls": total, "counted": 2 * len(counted)}, 2 * summed),
        ({"belief": "averaged", "calls": total, "counted": total}, np.sum(every, axis=0) / total),
    ]
    for index, item in enumerate(calls[:-1]):  # a retained graph believed to be replayed by the next call
        if item.call.retain_graph and id(item) in live:
            beliefs.append(({"belief": "retained_replayed", "calls": total, "counted": len(counted) + 1,
                             "call": index + 1}, summed + every[index]))
    if since > 1:  # the program zeroes: "zero_() clears .grad after the call" leaves nothing
        beliefs.append(({"belief": "cleared", "calls": total, "counted": 0}, np.zeros_like(every[-1])))
    for start in range(total - 1):
        if len(counted) != total - start:  # the program's own restart point gives the right answer
            detail = {"belief": "zeroed_before", "calls": total, "counted": total - start, "from_call": start + 1}
            beliefs.append((detail, np.sum(every[start:], axis=0)))
    return [({**detail, "program_from": since}, value) for detail, value in beliefs]
