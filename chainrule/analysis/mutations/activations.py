"""Catalogued wrong factors of more one-input elementwise ops (silu, gelu, elu, hardtanh,
tan, log1p, reciprocal, rsqrt, atan) and of a power with a tracked exponent: each rule
gives the right factor and what students use instead."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from chainrule.analysis.mutations.input_symbols import wrapped
from chainrule.analysis.mutations.mutation_types import NodeContext

Wrong = tuple[str, str, torch.Tensor, str]  # (rule id, used formula, used factor, lesson)
Found = tuple[str, torch.Tensor, list[Wrong]] | None
Rule = Callable[[NodeContext, int], Found]

SILU = "d(u·σ(u))/du = σ(u) + u·σ(u)·(1 - σ(u)) (the product rule: both factors depend on u)"
GELU = "d(u·Φ(u))/du = Φ(u) + u·φ(u) (the product rule: both factors depend on u)"
RECIPROCAL = "d(1/u)/du = -1/u² (the power rule with the exponent -1)"
RSQRT = "d(u^-0.5)/du = -0.5·u^-1.5 (the power rule with the exponent -0.5)"


def _silu(c: NodeContext, slot: int) -> Found:
    x, u = c.node._saved_self, c.labels[slot]
    s = torch.sigmoid(x)
    return f"σ({u}) + {wrapped(u)}·σ({u})·(1 - σ({u}))", s * (1 + x * (1 - s)), [
        ("silu_first_term", f"σ({u}) (the product rule's second term forgotten)", s, SILU),
        ("silu_sigmoid_prime", f"σ({u})·(1 - σ({u})) (σ′ alone)", s * (1 - s), SILU)]


def _gelu(c: NodeContext, slot: int) -> Found:
    x, u = c.node._saved_self, c.labels[slot]
    if str(c.node._saved_approximate) != "none":
        return None
    cdf = 0.5 * (1 + torch.erf(x / math.sqrt(2)))
    pdf = torch.exp(-x * x / 2) / math.sqrt(2 * math.pi)
    return f"Φ({u}) + {wrapped(u)}·φ({u})", cdf + x * pdf, [
        ("gelu_first_term", f"Φ({u}) (the product rule's second term forgotten)", cdf, GELU)]


def _elu(c: NodeContext, slot: int) -> Found:
    x, alpha, u = c.node._saved_self, float(c.node._saved_alpha), c.labels[slot]
    if x is None or float(c.node._saved_scale) != 1 or float(c.node._saved_input_scale) != 1:
        return None  # selu and celu scale their slopes
    positive = x > 0
    right = torch.where(positive, torch.ones_like(x), alpha * torch.exp(x))
    lesson = f"elu′(u) is 1 where u > 0 and α·eᵘ (α = {alpha:g}) where u ≤ 0"
    return f"1 or α·e^{wrapped(u)} (by the sign of {u})", right, [
        ("elu_as_relu", f"step({u}) (as a relu)", positive.to(x.dtype), lesson),
        ("elu_constant_slope", "1 or α (the eᵘ forgotten)", torch.where(positive, 1.0, alpha).to(x.dtype), lesson)]


def _hardtanh(c: NodeContext, slot: int) -> Found:
    x, low, high = c.node._saved_self, float(c.node._saved_min_val), float(c.node._saved_max_val)
    inside = ((x > low) & (x < high)).to(x.dtype)
    lesson = "hardtanh passes the gradient where the input is inside its bounds and blocks it outside"
    return f"1 inside [{low:g}, {high:g}], 0 outside ({c.labels[slot]})", inside, [
        ("clamp_flipped", "0 inside the bounds, 1 outside", 1 - inside, lesson),
        ("hardtanh_as_tanh", f"1 - tanh²({c.labels[slot]})", 1 - torch.tanh(x) ** 2, lesson)]


def _tan(c: NodeContext, slot: int) -> Found:
    t, u = c.node._saved_result, c.labels[slot]
    lesson = "d tan(u)/du = 1/cos²(u) = 1 + tan²(u)"
    return f"1 + tan²({u})", 1 + t**2, [("tan_as_tanh", f"1 - tan²({u})", 1 - t**2, lesson),
                                        ("tan_itself", f"tan({u})", t, lesson)]


def _log1p(c: NodeContext, slot: int) -> Found:
    x, u = c.node._saved_self, c.labels[slot]
    lesson = "d ln(1 + u)/du = 1/(1 + u)"
    return f"1/(1 + {u})", 1 / (1 + x), [("log1p_no_one", f"1/{wrapped(u)}", 1 / x, "d ln(1 + u)/du = 1/(1 + u): "
                                          "the 1 stays in the denominator"),
                                         ("log_itself", f"ln(1 + {u})", torch.log1p(x), lesson)]


def _reciprocal(c: NodeContext, slot: int) -> Found:
    r, u = c.node._saved_result, wrapped(c.labels[slot])
    return f"-1/{u}²", -(r**2), [("reciprocal_sign", f"1/{u}²", r**2, RECIPROCAL),
                                 ("reciprocal_not_squared", f"-1/{u}", -r, RECIPROCAL),
                                 ("log_itself", f"ln({u})", -torch.log(r.abs()), RECIPROCAL)]


def _rsqrt(c: NodeContext, slot: int) -> Found:
    r, u = c.node._saved_result, wrapped(c.labels[slot])
    return f"-0.5·{u}^-1.5", -0.5 * r**3, [("rsqrt_no_half", f"-{u}^-1.5", -(r**3), RSQRT),
                                           ("rsqrt_sign", f"0.5·{u}^-1.5", 0.5 * r**3, RSQRT),
                                           ("rsqrt_no_drop", f"-0.5·{u}^-0.5", -0.5 * r, RSQRT)]


def _atan(c: NodeContext, slot: int) -> Found:
    x, u = c.node._saved_self, c.labels[slot]
    lesson = "d atan(u)/du = 1/(1 + u²)"
    return f"1/(1 + {wrapped(u)}²)", 1 / (1 + x**2), [("atan_minus", f"1/(1 - {wrapped(u)}²)", 1 / (1 - x**2), lesson),
                                                      ("atan_unsquared", f"1/(1 + {u})", 1 / (1 + x), lesson)]


def _log_sigmoid(c: NodeContext, slot: int) -> Found:
    x, u = c.node._saved_self, c.labels[slot]
    lesson = "d ln σ(u)/du = σ′(u)/σ(u) = 1 - σ(u) = σ(-u)"
    s = torch.sigmoid(x)
    return f"1 - σ({u})", 1 - s, [("log_sigmoid_no_chain", f"1/σ({u}) (σ′ left out)", 1 / s, lesson),
                                  ("sigmoid_itself", f"σ({u})", s, lesson)]


def _tensor_power(c: NodeContext, slot: int) -> Found:
    """x ** y with both tracked: the power rule for the base, aˣ·ln a for the exponent."""
    base, exponent, result = c.node._saved_self, c.node._saved_exponent, c.node._saved_result
    b, e = wrapped(c.labels[0]), wrapped(c.labels[1])
    if slot == 0:
        power = "d(uⁿ)/du = n·uⁿ⁻¹ (the power rule): the exponent comes down as a factor and drops by one"
        return f"{e}·{b}^({c.labels[1]} - 1)", exponent * base ** (exponent - 1), [
            ("pow_no_drop", f"{e}·{b}^{e}", exponent * result, power),
            ("pow_no_coefficient", f"{b}^({c.labels[1]} - 1)", base ** (exponent - 1), power),
            ("pow_base_dropped", e, exponent, power)]
    lesson = "d(aᵛ)/dv = aᵛ·ln a: the variable is in the exponent, so the power rule does not apply"
    return f"{b}^{e}·ln {b}", result * torch.log(base), [
        ("exp_power_rule", f"{e}·{b}^({c.labels[1]} - 1)", exponent * base ** (exponent - 1), lesson),
        ("exp_no_log", f"{b}^{e}", result, lesson),
        ("exp_lowered", f"{b}^({c.labels[1]} - 1)·ln {b}", base ** (exponent - 1) * torch.log(base), lesson),
        ("exp_log_only", f"ln {b}", torch.log(base).expand_as(result), lesson),
        ("exp_log_of_exponent", f"{b}^{e}·ln {e}", result * torch.log(exponent), lesson)]


ACTIVATION_RULES: dict[str, Rule] = {
    "SiluBackward0": _silu, "GeluBackward0": _gelu, "EluBackward0": _elu, "HardtanhBackward0": _hardtanh,
    "TanBackward0": _tan, "Log1PBackward0": _log1p, "ReciprocalBackward0": _reciprocal, "RsqrtBackward0": _rsqrt,
    "AtanBackward0": _atan, "PowBackward1": _tensor_power, "LogSigmoidBackward0": _log_sigmoid,
}
ONE_INPUT_ACTIVATIONS = frozenset(ACTIVATION_RULES) - {"PowBackward1"}
