"""One grammar for part keys, used by the catalog loader, the engine and the harness.

- A *tensor path* names a value the program leaves behind: a variable, then attributes,
  `x`, `w`, `layer.weight`, `net.0.bias` (later segments may be digits: the layers of a
  Sequential are the attributes "0", "1", …).
- A *gradient key* is a tensor path read through `.grad`: `x.grad`, `layer.weight.grad`.
- A numeric part's key is a tensor path or a gradient key: the part's answer is that
  value of the reference program's namespace.
- Any other part (formula, code, choice) has a *label* key: a letter or `_`, then letters,
  digits, `_`, `.` or `-` (`dz_dx`, `grad_z`, `rising-or-falling`), naming what it asks.
Keys are matched by these patterns and resolved by getattr on the segments, never evaluated.
"""

from __future__ import annotations

import re

MAX_KEY_CHARS = 200
# No segment starts with "_": private and dunder attributes (`x.grad.__class__`) are never read.
TENSOR_PATH = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z0-9][A-Za-z0-9_]*)*")
LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


def is_tensor_path(text: object) -> bool:
    """`x`, `layer.weight`, `x.grad`, `net.0.bias.grad` (a gradient key is a path too)."""
    return isinstance(text, str) and len(text) <= MAX_KEY_CHARS and TENSOR_PATH.fullmatch(text) is not None


def is_label(text: object) -> bool:
    return isinstance(text, str) and len(text) <= MAX_KEY_CHARS and LABEL.fullmatch(text) is not None


def split_gradient_key(text: str) -> tuple[str, bool]:
    """(`layer.weight`, True) for `layer.weight.grad`; (`x`, False) for `x`."""
    if text.endswith(".grad") and text != ".grad":
        return text.removesuffix(".grad"), True
    return text, False
