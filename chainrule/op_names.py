"""Operation names in SPEC §5 notation, derived from autograd node classes."""

from __future__ import annotations

import re

# The ops with a kink or a choice between entries, whose slopes a student may ignore (op_name spelling).
KINK_OPS = frozenset({"relu", "leaky_relu", "clamp", "clamp_min", "clamp_max", "abs", "maximum", "minimum", "where",
                      "max", "min", "hardtanh", "relu6", "threshold", "masked_fill"})

# Torch spells a few nodes after an implementation detail students never see.
_FRIENDLY = {
    "rsub": "sub",  # 1 - x is recorded as RsubBackward1
    "accumulate_grad": "leaf",
}


def op_name(node_class_name: str) -> str:
    """`MulBackward0` → `mul`, `LogSoftmaxBackward0` → `log_softmax`,
    `DetachBackward` (our stand-in for detach) → `detach`."""
    base = re.sub(r"Backward\d*$", "", node_class_name) or node_class_name
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).lower()
    return _FRIENDLY.get(snake, snake)
