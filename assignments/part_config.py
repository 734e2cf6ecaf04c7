"""The kind-specific `config` of a part, typed: validated once when a part is loaded or saved
(`config_parse`), stored as JSON, read back as a dataclass (`config_load`, `Part.kind_config`).

symbolic: variables = {x = "x0"} (names students type → parameters), of = "x.grad",
          formula = "y + 2*x" (optional reference formula, checked at load)
code:     mode = "function" | "program" | "fix", starter = "…" (optional)
          function: function = "grad_z", args = ["x0", "y0"], returns = ["x.grad", "y.grad"],
                    signature = "grad_z(x, y) -> (dz_dx, dz_dy)", arg_type = "float" | "tensor",
                    forbid_autograd = true (optional)
          program/fix: reads = ["x.grad"], reference_error = "RuntimeError" (optional),
                       vary = ["x0"] (optional; default: the parameters the starter code uses)
          program/fix requirements (optional; only these may refuse right values, and the feedback
                    quotes them): backward_calls = 2 (exactly that many backward() calls),
                    forbid = ["torch.autograd.grad", "torch.func", ".data", "detach", "no_grad", "retain_graph"]
          partial = true (optional): a part reading several gradients earns a share per right one
                    (default: all or nothing; every gradient read counts, a None expected too)
choice:   options = ["rising", "falling"], answer = ["rising"], multiple = false,
          feedback = {falling = "…"} (optional)

No Django here: the catalog validation (spec.py) and the model both use it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Self

from chainrule.answers.code_requirements import FORBIDDABLE, MAX_BACKWARD_CALLS, Requirements
from chainrule.part_keys import is_tensor_path

IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MODES = ("function", "program", "fix")
MAX_OPTIONS = 20

Fail = Callable[[str, str], Exception]


class _Config:
    """JSON in and out: a field left at its default is not written, so an exported file says what
    its author wrote."""

    kind: ClassVar[str]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """From stored JSON, validated when it was saved: no checks again."""
        names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            default = f.default_factory() if callable(f.default_factory) else f.default
            if value != default:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    def keys_read(self, part_key: str) -> list[str]:
        """The tensors or gradients of the reference this part is compared with."""
        raise NotImplementedError


@dataclass(frozen=True)
class NumericConfig(_Config):
    kind: ClassVar[str] = "numeric"

    def keys_read(self, part_key: str) -> list[str]:
        return [part_key]


@dataclass(frozen=True)
class SymbolicConfig(_Config):
    kind: ClassVar[str] = "symbolic"
    variables: dict[str, str]  # the names students type → the parameters they stand for
    of: str  # the gradient the formula gives, e.g. "x.grad"
    formula: str | None = None  # the instructor's reference formula (a cross-check)

    def keys_read(self, part_key: str) -> list[str]:
        return [self.of]


@dataclass(frozen=True)
class CodeConfig(_Config):
    kind: ClassVar[str] = "code"
    mode: str
    starter: str = ""
    function: str = ""
    args: tuple[str, ...] = ()
    returns: tuple[str, ...] = ()
    signature: str = ""
    arg_type: str = "float"
    forbid_autograd: bool = False
    reads: tuple[str, ...] = ()
    reference_error: str | None = None
    vary: tuple[str, ...] | None = None  # None: the parameters the starter code uses
    partial: bool = False  # a share per right gradient read (else all or nothing)
    backward_calls: int | None = None  # program/fix: a requirement, exactly this many backward() calls
    forbid: tuple[str, ...] = ()  # program/fix: requirements, constructs the program may not use

    def keys_read(self, part_key: str) -> list[str]:
        return list(self.returns if self.mode == "function" else self.reads)

    @property
    def by_hand(self) -> bool:
        """A function part on plain floats that forbids autograd runs where torch does not exist:
        no `.backward()`, `torch.autograd` or torch internals to reach for, whatever the code tries."""
        return self.mode == "function" and self.forbid_autograd and self.arg_type == "float"

    @property
    def requirements(self) -> Requirements:
        """What the program must do beyond leaving the right gradients (checked in its source)."""
        return Requirements(self.backward_calls, tuple(self.forbid))

    @property
    def shown_signature(self) -> str:
        return self.signature or f"{self.function}(…)"


@dataclass(frozen=True)
class ChoiceConfig(_Config):
    kind: ClassVar[str] = "choice"
    options: tuple[str, ...]
    answer: tuple[str, ...]  # the right options, in the order of `options`
    multiple: bool = False
    feedback: dict[str, str] = field(default_factory=dict)  # option → message when it is chosen wrongly

    def keys_read(self, part_key: str) -> list[str]:
        return []


PartConfig = NumericConfig | SymbolicConfig | CodeConfig | ChoiceConfig
CONFIGS: dict[str, type[PartConfig]] = {c.kind: c for c in (NumericConfig, SymbolicConfig, CodeConfig, ChoiceConfig)}


def config_load(kind: str, data: Mapping[str, Any]) -> PartConfig:
    """The typed config of a stored part (validated when it was saved)."""
    return CONFIGS[kind].from_json(data)


def config_parse(kind: str, data: Mapping[str, Any], *, params: Mapping[str, Any], fail: Fail) -> PartConfig:
    """Validate an authored config table; raises fail(field, problem) at the first problem."""
    if kind == "symbolic":
        return _symbolic(data, params=params, fail=fail)
    if kind == "code":
        return _code(data, params=params, fail=fail)
    if kind == "choice":
        return _choice(data, fail=fail)
    _unknown(data, set(), fail)
    return NumericConfig()


def reference_keys(parts: Iterable[tuple[str, PartConfig]]) -> list[str]:
    """Every tensor or gradient the reference analysis must read, from (part key, config) pairs."""
    keys: list[str] = []
    for key, config in parts:
        keys.extend(k for k in config.keys_read(key) if k not in keys)
    return keys


def _symbolic(data: Mapping[str, Any], *, params: Mapping[str, Any], fail: Fail) -> SymbolicConfig:
    _unknown(data, _names(SymbolicConfig), fail)
    variables = data.get("variables")
    if not isinstance(variables, dict) or not variables:
        raise fail("config.variables", 'must map the names students type to parameters, e.g. {x = "x0"}')
    for name, param in variables.items():
        if not IDENT_RE.match(name) or not isinstance(param, str) or param not in params:
            raise fail(f"config.variables.{name}", f"must name a parameter in [params], got {param!r}")
    of = _grad_key(data.get("of"), "config.of", fail)
    formula = data.get("formula")
    if "formula" in data:
        _formula(formula, list(variables), fail)
    return SymbolicConfig(variables=dict(variables), of=of, formula=formula)


def _formula(formula: Any, variables: list[str], fail: Fail) -> None:
    from chainrule.answers.formula_parse import SymbolicError, parse_expression

    if not isinstance(formula, str):
        raise fail("config.formula", "must be a string such as 'y + 2*x'")
    try:
        parse_expression(formula, variables=variables)
    except SymbolicError as exc:
        raise fail("config.formula", str(exc)) from None


def _code(data: Mapping[str, Any], *, params: Mapping[str, Any], fail: Fail) -> CodeConfig:
    _unknown(data, _names(CodeConfig), fail)
    mode = data.get("mode")
    if mode not in MODES:
        raise fail("config.mode", f"must be one of {', '.join(MODES)}, got {mode!r}")
    for name in ("starter", "signature", "reference_error"):
        if not isinstance(data.get(name, ""), str):
            raise fail(f"config.{name}", "must be a string")
    for name in ("forbid_autograd", "partial"):
        if not isinstance(data.get(name, False), bool):
            raise fail(f"config.{name}", "must be true or false")
    if mode == "function":
        _function(data, params=params, fail=fail)
    else:
        if "returns" in data or "function" in data:
            raise fail("config.returns", f"belongs to function mode; {mode} mode compares `reads`")
        vary = data.get("vary", [])
        if not isinstance(vary, list) or any(not isinstance(n, str) or n not in params for n in vary):
            raise fail("config.vary", f"must list parameters that change between points, from {sorted(params)}")
        _keys(data.get("reads"), "config.reads", 'must list what to compare, e.g. ["x.grad"]', fail)
    _requirements(data, mode=mode, fail=fail)
    return CodeConfig.from_json(data)


def _requirements(data: Mapping[str, Any], *, mode: str, fail: Fail) -> None:
    for name in ("backward_calls", "forbid"):
        if name in data and mode == "function":
            raise fail(f"config.{name}", "is a requirement of a program or fix part; a function part by hand "
                                         "uses forbid_autograd")
    calls = data.get("backward_calls")
    if calls is not None and (isinstance(calls, bool) or not isinstance(calls, int)
                              or not 1 <= calls <= MAX_BACKWARD_CALLS):
        raise fail("config.backward_calls", f"must be a whole number of backward() calls from 1 to "
                                            f"{MAX_BACKWARD_CALLS}, got {calls!r}")
    forbid = data.get("forbid", [])
    if not isinstance(forbid, list) or any(item not in FORBIDDABLE for item in forbid):
        bad = next((item for item in forbid if item not in FORBIDDABLE), forbid) if isinstance(forbid, list) else forbid
        raise fail("config.forbid", f"must list constructs from {', '.join(FORBIDDABLE)}; got {bad!r}")
    if len(set(forbid)) != len(forbid):
        raise fail("config.forbid", "lists the same construct twice")


def _function(data: Mapping[str, Any], *, params: Mapping[str, Any], fail: Fail) -> None:
    if not IDENT_RE.match(str(data.get("function", ""))):
        raise fail("config.function", "must be the name of the function students write, e.g. 'grad_z'")
    args = data.get("args")
    if not isinstance(args, list) or any(not isinstance(arg, str) or arg not in params for arg in args):
        raise fail("config.args", f"must list parameters passed to the function, from {sorted(params)}")
    _keys(data.get("returns"), "config.returns", 'must list what each returned value answers, e.g. ["x.grad"]',
          fail)
    if data.get("arg_type", "float") not in ("float", "tensor"):
        raise fail("config.arg_type", "must be 'float' or 'tensor'")


def _choice(data: Mapping[str, Any], *, fail: Fail) -> ChoiceConfig:
    _unknown(data, _names(ChoiceConfig), fail)
    options = data.get("options")
    if (not isinstance(options, list) or not 2 <= len(options) <= MAX_OPTIONS
            or not all(isinstance(o, str) and o.strip() for o in options)):
        raise fail("config.options", f"must be a list of 2 to {MAX_OPTIONS} non-empty strings")
    if len(set(options)) != len(options):
        raise fail("config.options", "lists the same option twice")
    multiple = data.get("multiple", False)
    if not isinstance(multiple, bool):
        raise fail("config.multiple", "must be true or false")
    answer = data.get("answer")
    answer = [answer] if isinstance(answer, str) else answer
    if not isinstance(answer, list) or not answer or any(a not in options for a in answer):
        raise fail("config.answer", "must name one or more of the options")
    if not multiple and len(answer) != 1:
        raise fail("config.answer", "a single-choice part has exactly one right option (or set multiple = true)")
    feedback = data.get("feedback", {})
    if not isinstance(feedback, dict) or any(k not in options or not isinstance(v, str) for k, v in feedback.items()):
        raise fail("config.feedback", "must map options to messages")
    return ChoiceConfig(options=tuple(options), answer=tuple(sorted(set(answer), key=options.index)),
                        multiple=multiple, feedback=dict(feedback))


def _keys(keys: Any, name: str, problem: str, fail: Fail) -> None:
    if not isinstance(keys, list) or not keys:
        raise fail(name, problem)
    for key in keys:
        _grad_key(key, name, fail)


def _grad_key(key: Any, name: str, fail: Fail) -> str:
    if not is_tensor_path(key):
        raise fail(name, f"must be a gradient or tensor name such as 'x.grad', got {key!r}")
    return key


def _names(config: type[_Config]) -> set[str]:
    return {f.name for f in fields(config)}  # type: ignore[arg-type]


def _unknown(data: Mapping[str, Any], allowed: set[str], fail: Fail) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        where = f"config.{extra[0]}"
        raise fail(where, f"unknown field (allowed: {', '.join(sorted(allowed))})" if allowed
                   else "numeric parts take no config")
