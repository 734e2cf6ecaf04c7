"""Validation of the kind-specific `config` table of symbolic and code parts.

symbolic: variables = {x = "x0"} (names students type → parameters), of = "x.grad",
          formula = "y + 2*x" (optional reference formula, checked at load)
code:     mode = "function" | "program" | "fix", starter = "…" (optional)
          function: function = "grad_z", args = ["x0", "y0"], returns = ["x.grad", "y.grad"],
                    signature = "grad_z(x, y) -> (dz_dx, dz_dy)", arg_type = "float" | "tensor"
          program/fix: reads = ["x.grad"], reference_error = "RuntimeError" (optional),
                       vary = ["x0"] (optional; default: the parameters the starter code uses)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from chainrule.part_keys import is_tensor_path

IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SYMBOLIC_FIELDS = {"variables", "of", "formula"}
CODE_FIELDS = {"mode", "starter", "function", "args", "returns", "signature", "arg_type", "reads",
               "reference_error", "forbid_autograd", "vary"}
MODES = ("function", "program", "fix")

Fail = Callable[[str, str], Exception]


def symbolic_config(config: dict[str, Any], *, params: dict[str, Any], fail: Fail) -> dict[str, Any]:
    _unknown(config, SYMBOLIC_FIELDS, fail)
    variables = config.get("variables")
    if not isinstance(variables, dict) or not variables:
        raise fail("config.variables", 'must map the names students type to parameters, e.g. {x = "x0"}')
    for name, param in variables.items():
        if not IDENT_RE.match(name) or not isinstance(param, str) or param not in params:
            raise fail(f"config.variables.{name}", f"must name a parameter in [params], got {param!r}")
    _grad_key(config.get("of"), "config.of", fail)
    if "formula" in config:
        _formula(config["formula"], list(variables), fail)
    return dict(config)


def _formula(formula: Any, variables: list[str], fail: Fail) -> None:
    from chainrule.answers.formula_parse import SymbolicError, parse_expression

    if not isinstance(formula, str):
        raise fail("config.formula", "must be a string such as 'y + 2*x'")
    try:
        parse_expression(formula, variables=variables)
    except SymbolicError as exc:
        raise fail("config.formula", str(exc)) from None


def code_config(config: dict[str, Any], *, params: dict[str, Any], fail: Fail) -> dict[str, Any]:
    _unknown(config, CODE_FIELDS, fail)
    mode = config.get("mode")
    if mode not in MODES:
        raise fail("config.mode", f"must be one of {', '.join(MODES)}, got {mode!r}")
    if not isinstance(config.get("starter", ""), str):
        raise fail("config.starter", "must be a string of Python code")
    if mode == "function":
        _function_config(config, params=params, fail=fail)
    else:
        if "returns" in config or "function" in config:
            raise fail("config.returns", f"belongs to function mode; {mode} mode compares `reads`")
        vary = config.get("vary", [])
        if not isinstance(vary, list) or any(not isinstance(n, str) or n not in params for n in vary):
            raise fail("config.vary", f"must list parameters that change between points, from {sorted(params)}")
        reads = config.get("reads")
        if not isinstance(reads, list) or not reads:
            raise fail("config.reads", 'must list what to compare, e.g. ["x.grad"]')
        for key in reads:
            _grad_key(key, "config.reads", fail)
    return dict(config)


def _function_config(config: dict[str, Any], *, params: dict[str, Any], fail: Fail) -> None:
    if not IDENT_RE.match(str(config.get("function", ""))):
        raise fail("config.function", "must be the name of the function students write, e.g. 'grad_z'")
    args = config.get("args")
    if not isinstance(args, list) or any(not isinstance(arg, str) or arg not in params for arg in args):
        raise fail("config.args", f"must list parameters passed to the function, from {sorted(params)}")
    returns = config.get("returns")
    if not isinstance(returns, list) or not returns:
        raise fail("config.returns", 'must list what each returned value answers, e.g. ["x.grad"]')
    for key in returns:
        _grad_key(key, "config.returns", fail)
    if config.get("arg_type", "float") not in ("float", "tensor"):
        raise fail("config.arg_type", "must be 'float' or 'tensor'")


def _grad_key(key: Any, field: str, fail: Fail) -> None:
    if not is_tensor_path(key):
        raise fail(field, f"must be a gradient or tensor name such as 'x.grad', got {key!r}")


def _unknown(config: dict[str, Any], allowed: set[str], fail: Fail) -> None:
    extra = sorted(set(config) - allowed)
    if extra:
        raise fail(f"config.{extra[0]}", f"unknown field (allowed: {', '.join(sorted(allowed))})")


def reference_keys(parts: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    """Every tensor or gradient the reference analysis must read, from (key, kind, config) triples."""
    keys: list[str] = []
    for key, kind, config in parts:
        if kind == "numeric":
            wanted = [key]
        elif kind == "symbolic":
            wanted = [config["of"]]
        else:
            wanted = list(config.get("returns") or config.get("reads") or [])
        keys.extend(k for k in wanted if k not in keys)
    return keys
