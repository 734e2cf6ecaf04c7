"""Helpers for the derive scripts: format numbers as a student types them, print the
reference graph's node names, and write tests/corpus/cases/<slug>.toml (the slug starts with corpus-).

Every wrong number in the corpus is computed in a derive script from the mistake a
student makes (a plain torch or Python computation of the wrong derivation), never
taken from the grader. Run a script to (re)write its case file:

    .venv/bin/python tests/corpus/derive/<slug>.py
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import Any

import torch

CASES = Path(__file__).resolve().parent.parent / "cases"
SAVED: list[torch.Tensor] = []  # every tensor autograd saved for a backward pass in this script


def _pack(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.is_floating_point():
        SAVED.append(tensor.detach().clone())
    return tensor


_saved_hooks = torch.autograd.graph.saved_tensors_hooks(_pack, lambda tensor: tensor)
_saved_hooks.__enter__()  # for the whole script: every graph it builds
ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))


def plain(value: Any) -> Any:
    """A tensor, list or number as nested Python floats."""
    if isinstance(value, torch.Tensor):
        value = value.detach().tolist()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return float(value)


def number(value: float) -> str:
    text = f"{value:.10g}"
    return "0" if text == "-0" else text


def answer(value: Any) -> str:
    """`[1.5, -2]`, nested for matrices; a bare number for a scalar."""
    value = plain(value)
    if isinstance(value, list):
        return "[" + ", ".join(answer(v) for v in value) + "]"
    return number(value)


def bare(value: Any) -> str:
    """`1.5, -2` (a flat list without brackets)."""
    return ", ".join(answer(v) for v in plain(value))


def as_tensor(value: Any) -> str:
    """What `print(x.grad)` shows, pasted: `tensor([0.2500, -0.7500])`; torch's own
    formatting when its 4 decimals keep the value, else full digits inside tensor(…)."""
    printed = repr(torch.tensor(plain(value))).replace("\n", " ")
    printed = re.sub(r"\s+", " ", printed)
    digits = [float(t) for t in re.findall(r"-?\d+\.?\d*(?:e[+-]?\d+)?", printed)]
    if close(digits, value, rel=1e-6):
        return printed
    return "tensor(" + answer(value) + ")"


def flat(value: Any) -> list[float]:
    value = plain(value)
    if isinstance(value, list):
        return [x for v in value for x in flat(v)]
    return [value]


def shape(value: Any) -> tuple[int, ...]:
    value = plain(value)
    return (len(value), *shape(value[0])) if isinstance(value, list) else ()


def close(a: Any, b: Any, rel: float = 1e-3) -> bool:
    if a is None or b is None:
        return a is b
    fa, fb = flat(a), flat(b)
    if len(fa) != len(fb) or shape(a) != shape(b):
        return False
    return all(math.isclose(x, y, rel_tol=rel, abs_tol=1e-6) for x, y in zip(fa, fb, strict=True))


def node_names(tensor: torch.Tensor) -> None:
    """Print the backward graph structurally (class names → op names), for the corpus author."""
    from chainrule.op_names import op_name

    def walk(fn: Any, depth: int) -> None:
        if fn is None:
            return
        label = op_name(type(fn).__name__)
        variable = getattr(fn, "variable", None)
        extra = f" {tuple(variable.shape)}" if variable is not None else ""
        print("  " * depth + f"{type(fn).__name__} -> {label}{extra}")
        for child, _ in fn.next_functions:
            walk(child, depth + 1)

    walk(tensor.grad_fn, 0)


def at(formula: str, **variables: float) -> float:
    """A formula as a student types it (`^` for powers, explicit `*`), evaluated at a point
    with Python's math: the derive scripts check each wrong formula against the number of
    the same mistake. Only the corpus author's own formulas are evaluated here."""
    names = {"exp": math.exp, "log": math.log, "sqrt": math.sqrt, "tanh": math.tanh, "sin": math.sin, "cos": math.cos,
             "sigmoid": lambda v: 1 / (1 + math.exp(-v)), **variables}
    return float(eval(formula.replace("^", "**"), {"__builtins__": {}}, names))  # noqa: S307


def graph_values(tensor: torch.Tensor) -> list[Any]:
    """Every value the backward graph of `tensor` holds: leaves and the tensors its nodes
    saved for the backward pass (inputs, outputs, constants such as a weight matrix)."""
    values: list[Any] = [tensor.detach()]
    seen: set[int] = set()

    def walk(fn: Any) -> None:
        if fn is None or id(fn) in seen:
            return
        seen.add(id(fn))
        variable = getattr(fn, "variable", None)
        if isinstance(variable, torch.Tensor):
            values.append(variable.detach())
        for name in dir(fn):
            if name.startswith("_saved_"):
                try:
                    saved = getattr(fn, name)
                except RuntimeError:  # freed after backward
                    continue
                if isinstance(saved, torch.Tensor) and saved.is_floating_point():
                    values.append(saved.detach())
        for child, _ in fn.next_functions:
            walk(child)

    walk(tensor.grad_fn)
    return values


def toml_value(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


class Cases:
    """Collects right and wrong answers of one assignment; checks that every wrong
    number differs from the right one and from the other wrong numbers of its part."""

    def __init__(self, slug: str, folder: Path = CASES) -> None:
        self.slug = slug
        self.folder = folder  # where <slug>.toml is written (the held-out corpus has its own)
        self.right: list[dict[str, Any]] = []
        self.wrong: list[dict[str, Any]] = []
        self.values: dict[str, Any] = {}
        self.wrong_values: list[tuple[str, Any, str]] = []
        self.forwards: list[Any] = []

    def graph(self, tensor: torch.Tensor) -> None:
        """Register every forward value the graph of `tensor` holds (build it again with
        retain_graph or before backward so the saved tensors are still there)."""
        self.forward(*graph_values(tensor))

    def forward(self, *values: Any) -> None:
        """Forward values of the graph's nodes: a wrong answer equal to one of them would read
        as `forward_value` too, so only a `forward_value` case may coincide with one."""
        self.forwards.extend(values)

    def correct(self, part: str, value: Any, *texts: str) -> None:
        """The reference value (from torch autograd) and the ways a student may type it."""
        self.values[part] = value
        for text in texts:
            self.right.append({"part": part, "answer": text})

    def mistake(self, part: str, value: Any, mistake: str, kind: str, *, text: str | None = None,
                **expected: Any) -> None:
        right = self.values[part]
        if close(value, right):
            raise SystemExit(f"{self.slug} {part}: {mistake!r} gives the right answer")
        comparable = right is not None and value is not None
        if kind != "forward_value" and comparable and any(close(value, f) for f in [*self.forwards, *SAVED]):
            raise SystemExit(f"{self.slug} {part}: {mistake!r} equals a forward value")
        for other_part, other, other_mistake in self.wrong_values:
            if other_part == part and close(other, value):
                raise SystemExit(f"{self.slug} {part}: {mistake!r} coincides with {other_mistake!r}")
        self.wrong_values.append((part, value, mistake))
        case: dict[str, Any] = {"part": part, "answer": text if text is not None else answer(value),
                                "mistake": mistake, "kind": kind}
        case.update(expected)
        self.wrong.append(case)

    def write(self) -> None:
        script = Path(sys.argv[0]).resolve().relative_to(ROOT)
        lines = [f"# Written by {script}; each wrong number is computed there from the mistake.", ""]
        for case in self.right:
            lines += ["[[right]]"] + [f"{k} = {toml_value(v)}" for k, v in case.items()] + [""]
        for case in self.wrong:
            lines.append("[[wrong]]")
            for key, value in case.items():
                if key == "components":
                    continue
                lines.append(f"{key} = {toml_value(value)}")
            for component in case.get("components", []):
                lines.append("[[wrong.components]]")
                lines += [f"{k} = {toml_value(v)}" for k, v in component.items()]
            lines.append("")
        (self.folder / f"{self.slug}.toml").write_text("\n".join(lines))
        print(f"wrote {self.slug}: {len(self.right)} right, {len(self.wrong)} wrong")
