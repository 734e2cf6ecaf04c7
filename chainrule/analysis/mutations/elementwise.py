"""Catalogued mistakes of elementwise ops: the local derivative is a factor,
so the wrong vector-Jacobian product is the arriving gradient times the
factor the student uses (summed back over broadcast dimensions)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from chainrule.analysis.mutations.activations import ACTIVATION_RULES, ONE_INPUT_ACTIVATIONS
from chainrule.analysis.mutations.constant_operands import constant_operand, constant_wrongs
from chainrule.analysis.mutations.input_symbols import wrapped as _wrapped
from chainrule.analysis.mutations.mutation_types import Mutation, NodeContext, RightDerivative
from chainrule.op_names import op_name
from chainrule.values import format_number

Wrong = tuple[str, str, torch.Tensor, str]  # (rule id, used formula, used factor, lesson)
Rule = Callable[[NodeContext, int], tuple[str, torch.Tensor, list[Wrong]] | None]

POWER_LESSON = "d(xⁿ)/dx = n·xⁿ⁻¹ (the power rule): the exponent comes down as a factor and drops by one"


def _power(label: str, exponent: float) -> str:
    if exponent == 1:
        return label
    if exponent == 0:
        return "1"
    return f"{_wrapped(label)}^{format_number(exponent)}"


def _times(coefficient: float, expression: str) -> str:
    if coefficient == 1:
        return expression
    if coefficient == -1:
        return f"-{_wrapped(expression)}"
    return f"{format_number(coefficient)}·{_wrapped(expression)}"


def _pow(c: NodeContext, slot: int) -> tuple[str, torch.Tensor, list[Wrong]] | None:
    n, x, u = float(c.node._saved_exponent), c.node._saved_self, c.labels[slot]
    wrongs = [
        ("pow_no_drop", _times(n, u), n * x, POWER_LESSON),
        ("pow_no_coefficient", _power(u, n - 1), x ** (n - 1), POWER_LESSON),
        ("pow_exponent_kept", _times(n, _power(u, n)), n * x**n, POWER_LESSON),
        ("pow_base_dropped", format_number(n), torch.full_like(x, n), POWER_LESSON),
    ]
    if n < 0 or not n.is_integer():
        wrongs.append(("pow_exponent_up", _times(n, _power(u, n + 1)), n * x ** (n + 1), POWER_LESSON))
        wrongs.append(("pow_lowered_twice", _times(n, _power(u, n - 2)), n * x ** (n - 2), POWER_LESSON))
    if n < 0 and n != -1:
        wrongs.append(("pow_sign_only", _times(-1.0, _power(u, n - 1)), -(x ** (n - 1)), POWER_LESSON))
    return _times(n, _power(u, n - 1)), n * x ** (n - 1), wrongs


def _pow_base(c: NodeContext, slot: int) -> tuple[str, torch.Tensor, list[Wrong]] | None:
    a, x, u = float(c.node._saved_self), c.node._saved_exponent, c.labels[slot]
    result = c.node._saved_result
    lesson = "d(aˣ)/dx = aˣ·ln a: the variable is in the exponent, so the power rule does not apply"
    base, power = format_number(a), _wrapped(u)
    return f"{base}^{power}·ln {base}", result * torch.log(torch.tensor(a)), [
        ("exp_power_rule", f"{power}·{base}^({u} - 1)", x * a ** (x - 1), lesson),
        ("exp_no_log", f"{base}^{power}", result, lesson)]


MUL = "d(a·b)/da = b: the derivative of a product with respect to one factor is the other factor"
MUL_KEPT = "d(a·b)/da = b: the other factor is not differentiated too"
def _mul(c: NodeContext, slot: int) -> tuple[str, torch.Tensor, list[Wrong]] | None:
    saved = [c.node._saved_self, c.node._saved_other]
    own = saved[slot] if saved[slot] is not None else c.value_of(slot)
    other = saved[1 - slot]
    if own is None or other is None:
        return None
    wrongs = [("mul_own_operand", c.labels[slot], own, MUL),
              *constant_wrongs(c, 1 - slot, constant_operand(c, 1 - slot, other), divides=False)]
    child = c.node.next_functions[1 - slot][0] if len(c.node.next_functions) == 2 else None
    inner = _derivative_of(c, child)
    if inner is not None:
        lesson = (f"{MUL_KEPT}: the factor {c.labels[1 - slot]} is kept as it is, and {inner[0]} is the local "
                  f"derivative of {op_name(type(child).__name__)}, which belongs to its own edge")
        wrongs.append(("mul_other_differentiated", inner[0], inner[1], lesson))
    return c.labels[1 - slot], other, wrongs


def _derivative_of(c: NodeContext, node: object) -> tuple[str, torch.Tensor] | None:
    """The local derivative of a one-input function node (log, tanh, x², ...) at its input,
    for a student who differentiates a product's other factor as well."""
    rule = _RULES.get(type(node).__name__) if type(node).__name__ in ONE_INPUT else None
    if rule is None or c.labels_of is None:
        return None
    try:
        found = rule(NodeContext(node, [c.grad], (None,), c.labels_of(node), lambda _: None), 0)
    except (RuntimeError, AttributeError, TypeError):
        return None
    return (found[0], found[1]) if found is not None else None


def _div(c: NodeContext, slot: int) -> tuple[str, torch.Tensor, list[Wrong]] | None:
    a, b = c.node._saved_self, c.node._saved_other
    if a is None:
        a = c.value_of(0)
    if a is None or b is None:
        return None
    la, lb = _wrapped(c.labels[0]), _wrapped(c.labels[1])
    lesson = "the quotient rule: d(a/b)/da = 1/b and d(a/b)/db = -a/b²"
    if slot == 0:
        return f"1/{lb}", 1 / b, [("div_numerator_b", lb, b, lesson),
                                  *constant_wrongs(c, 1, constant_operand(c, 1, b), divides=True)]
    return f"-{la}/{lb}²", -a / b**2, [
        ("div_quotient_sign", f"{la}/{lb}²", a / b**2, lesson),
        ("div_denominator_unsquared", f"-{la}/{lb}", -a / b, lesson),
        ("div_no_numerator", f"-1/{lb}²", -1 / b**2, lesson),
        ("div_as_numerator", f"1/{lb}", 1 / b, lesson),
        ("div_power_slip", f"-{la}/{lb}³", -a / b**3, lesson),
    ]


def _unary(
    right: Callable[[torch.Tensor, str], tuple[str, torch.Tensor]],
    wrongs: Callable[[torch.Tensor, str], list[Wrong]],
    saved: str,
) -> Rule:
    def rule(c: NodeContext, slot: int) -> tuple[str, torch.Tensor, list[Wrong]] | None:
        value = getattr(c.node, saved, None)
        if not isinstance(value, torch.Tensor):
            return None
        text, factor = right(value, c.labels[slot])
        return text, factor, wrongs(value, c.labels[slot])

    return rule


SIN = "d sin(u)/du = cos(u)"
COS = "d cos(u)/du = -sin(u)"
TANH = "d tanh(u)/du = 1 - tanh²(u)"
SIGMOID = "dσ(u)/du = σ(u)·(1 - σ(u))"
LOG = "d ln(u)/du = 1/u"
SQRT = "d√u/du = 1/(2√u)"
KINK = "at a kink the slope depends on the side: the forward value tells you which side each entry is on"

_RULES: dict[str, Rule] = {
    "PowBackward0": _pow,
    "PowBackward2": _pow_base,
    "MulBackward0": _mul,
    "DivBackward0": _div,
    "SinBackward0": _unary(lambda x, u: (f"cos({u})", torch.cos(x)), lambda x, u: [
        ("sin_sign", f"-cos({u})", -torch.cos(x), SIN), ("sin_itself", f"sin({u})", torch.sin(x), SIN)],
        "_saved_self"),
    "CosBackward0": _unary(lambda x, u: (f"-sin({u})", -torch.sin(x)), lambda x, u: [
        ("cos_sign", f"sin({u})", torch.sin(x), COS), ("cos_itself", f"cos({u})", torch.cos(x), COS)],
        "_saved_self"),
    "TanhBackward0": _unary(lambda t, u: (f"1 - tanh²({u})", 1 - t**2), lambda t, u: [
        ("tanh_unsquared", f"1 - tanh({u})", 1 - t, TANH), ("tanh_plus", f"1 + tanh²({u})", 1 + t**2, TANH),
        ("tanh_itself", f"tanh({u})", t, TANH)], "_saved_result"),
    "SigmoidBackward0": _unary(lambda s, u: (f"σ({u})·(1 - σ({u}))", s * (1 - s)), lambda s, u: [
        ("sigmoid_itself", f"σ({u})", s, SIGMOID), ("sigmoid_complement", f"1 - σ({u})", 1 - s, SIGMOID)],
        "_saved_result"),
    "ExpBackward0": _unary(lambda e, u: (f"e^{_wrapped(u)}", e), lambda e, u: [
        ("exp_power_rule", f"{_wrapped(u)}·e^({u} - 1)", torch.log(e) * torch.exp(torch.log(e) - 1),
         "d eᵘ/du = eᵘ: the exponential is its own derivative, the power rule does not apply")], "_saved_result"),
    "LogBackward0": _unary(lambda x, u: (f"1/{_wrapped(u)}", 1 / x), lambda x, u: [
        ("log_itself", f"ln({u})", torch.log(x), LOG), ("log_argument", u, x, LOG),
        ("log_squared", f"1/{_wrapped(u)}²", 1 / x**2, LOG),
        ("log_minus_squared", f"-1/{_wrapped(u)}²", -1 / x**2, LOG)], "_saved_self"),
    "SqrtBackward0": _unary(lambda r, u: (f"1/(2√{_wrapped(u)})", 1 / (2 * r)), lambda r, u: [
        ("sqrt_no_half", f"1/√{_wrapped(u)}", 1 / r, SQRT), ("sqrt_itself", f"√{_wrapped(u)}", r, SQRT),
        ("sqrt_half_itself", f"√{_wrapped(u)}/2", r / 2, SQRT), ("sqrt_no_root", f"1/(2{_wrapped(u)})", 1 / (2 * r**2),
                                                                     SQRT)],
        "_saved_result"),
    "ReluBackward0": _unary(lambda r, u: (f"step({u})", (r > 0).to(r.dtype)), lambda r, u: [
        ("relu_flipped", f"1 - step({u})", (r <= 0).to(r.dtype), "relu′(u) is 1 where u > 0 and 0 where u < 0")],
        "_saved_result"),
    "AbsBackward0": _unary(lambda x, u: (f"sign({u})", torch.sign(x)), lambda x, u: [
        ("abs_plus_one", "1", torch.ones_like(x), "d|u|/du = sign(u): -1 left of zero, +1 right of it")],
        "_saved_self"),
}


def _softplus(c: NodeContext, slot: int) -> tuple[str, torch.Tensor, list[Wrong]] | None:
    x, beta, u = c.node._saved_self, float(c.node._saved_beta), c.labels[slot]
    lesson = "d softplus(u)/du = d ln(1 + eᵘ)/du = eᵘ/(1 + eᵘ) = σ(u)"
    return f"σ({u})", torch.sigmoid(beta * x), [
        ("softplus_no_normaliser", f"e^{_wrapped(u)}", torch.exp(beta * x), lesson),
        ("softplus_wrong_sigmoid", f"σ(-{u})", torch.sigmoid(-beta * x), lesson),
        ("softplus_itself", f"softplus({u})", torch.nn.functional.softplus(x, beta=beta), lesson)]


def _leaky(c: NodeContext, slot: int) -> tuple[str, torch.Tensor, list[Wrong]] | None:
    x, alpha, u = c.node._saved_self, float(c.node._saved_negative_slope), c.labels[slot]
    right = torch.where(x > 0, 1.0, alpha).to(x.dtype)
    a = format_number(alpha)
    lesson = f"leaky_relu′(u) is 1 where u > 0 and the negative slope {a} where u < 0"
    return f"1 or {a} (by the sign of {u})", right, [
        ("leaky_as_relu", f"step({u})", (x > 0).to(x.dtype), lesson),
        ("leaky_flipped", f"{a} or 1", torch.where(x > 0, alpha, 1.0).to(x.dtype), lesson)]


def _clamp(c: NodeContext, slot: int) -> tuple[str, torch.Tensor, list[Wrong]] | None:
    x, low, high = c.node._saved_self, c.node._saved_min, c.node._saved_max
    inside = torch.ones_like(x, dtype=torch.bool)
    if low is not None:
        inside &= x >= float(low)
    if high is not None:
        inside &= x <= float(high)
    lesson = "clamp passes the gradient where the input is inside the bounds and blocks it where it is clamped"
    right = inside.to(x.dtype)
    return f"1 inside the bounds, 0 outside ({c.labels[slot]})", right, [
        ("clamp_flipped", "0 inside the bounds, 1 outside", 1 - right, lesson)]


def _two_sided(c: NodeContext, slot: int) -> tuple[str, torch.Tensor, list[Wrong]] | None:
    a, b = c.node._saved_self, c.node._saved_other
    bigger = type(c.node).__name__.startswith("Maximum")
    wins = (a > b) if bigger else (a < b)
    mask = (wins if slot == 0 else ~wins).to(a.dtype)
    name = "maximum" if bigger else "minimum"
    lesson = f"{name}(a, b) passes the gradient only to the operand that wins at each entry"
    return f"1 where {c.labels[slot]} wins", mask, [("minmax_swapped", f"1 where {c.labels[slot]} loses", 1 - mask,
                                                     lesson)]


def _masked_fill(c: NodeContext, slot: int) -> tuple[str, torch.Tensor, list[Wrong]] | None:
    mask = c.node._saved_mask
    if slot != 0 or mask is None:
        return None
    kept_entries = (~mask).to(c.grad.dtype)
    lesson = "masked_fill replaces the masked entries by a constant: they pass no gradient, the others pass it all"
    return "1 where not filled, 0 where filled", kept_entries, [
        ("masked_fill_inverted", "1 where filled, 0 where not", 1 - kept_entries, lesson)]


def _where(c: NodeContext, slot: int) -> tuple[str, torch.Tensor, list[Wrong]] | None:
    condition = c.node._saved_condition
    first = len(c.node.next_functions) - 2  # the chosen-where-true branch (after the condition, if it is listed)
    mask = (condition if slot == first else ~condition).to(c.grad.dtype)
    lesson = "where(cond, a, b) passes the gradient to a where cond holds and to b elsewhere"
    return f"1 where {c.labels[slot]} is chosen", mask, [("where_swapped", f"1 where {c.labels[slot]} is not chosen",
                                                         1 - mask, lesson)]


_RULES.update({"SoftplusBackward0": _softplus, "LeakyReluBackward0": _leaky, "ClampBackward1": _clamp,
               "MaximumBackward0": _two_sided, "MinimumBackward0": _two_sided, "WhereBackward0": _where,
               "MaskedFillBackward0": _masked_fill})
_RULES.update(ACTIVATION_RULES)
ONE_INPUT = frozenset({"PowBackward0", "SinBackward0", "CosBackward0", "TanhBackward0", "SigmoidBackward0",
                       "ExpBackward0", "LogBackward0", "SqrtBackward0", "SoftplusBackward0"}) | ONE_INPUT_ACTIVATIONS
CONSTANT_FACTORS = {"AddBackward0": (1.0, 1.0), "SubBackward0": (1.0, -1.0), "RsubBackward1": (-1.0,),
                    "NegBackward0": (-1.0,)}


# f′ as a function of f's input, for the slip of taking it at the wrong argument: cos(x) for sin(2x)
OUTER_DERIVATIVES: dict[str, tuple[str, Callable[[torch.Tensor], torch.Tensor]]] = {
    "SinBackward0": ("cos({})", torch.cos),
    "CosBackward0": ("-sin({})", lambda v: -torch.sin(v)),
    "TanhBackward0": ("1 - tanh²({})", lambda v: 1 - torch.tanh(v) ** 2),
    "SigmoidBackward0": ("σ({0})·(1 - σ({0}))", lambda v: torch.sigmoid(v) * (1 - torch.sigmoid(v))),
    "ExpBackward0": ("e^{}", torch.exp),
    "LogBackward0": ("1/{}", lambda v: 1 / v),
    "SqrtBackward0": ("1/(2√{})", lambda v: 1 / (2 * torch.sqrt(v))),
}
_BARE = frozenset({"ExpBackward0", "SqrtBackward0"})  # e^x^2 and √x^2 read wrong: such an argument gets ( )
MAX_INNER_DEPTH = 3  # sin(2·x + 1): its input is made by add, from mul, from the leaf x


def inner_argument_wrongs(c: NodeContext, slot: int) -> list[Wrong]:
    """f′ taken at an input further down instead of at f's own input u: d sin(2x)/dx as cos(x)·2, d ln(x²)
    as (1/x)·2x. The candidates are the tensors u is made from, down to the leaves (up to three ops
    below), with u's shape; the chain rule's inner factors stay on their own edges."""
    outer = OUTER_DERIVATIVES.get(type(c.node).__name__)
    child = c.node.next_functions[slot][0] if slot < len(c.node.next_functions) else None
    own = c.value_of(slot)
    if outer is None or child is None or own is None or c.value_at is None or c.labels_of is None:
        return []
    template, derivative = outer
    bare = type(c.node).__name__ in _BARE

    def argument(label: str) -> str:
        if "({}" in template or "({0}" in template:
            return label  # cos(2·x): the function's own parentheses
        return f"({label})" if bare and not label.isidentifier() else _wrapped(label)

    own_label = c.labels[slot]
    lesson = (f"the chain rule takes the outer derivative at the function's own input: d f(g)/dx = f′(g)·g′(x), "
              f"so {template.format(argument(own_label))}, not f′ at what {own_label} is made from")
    wrongs: list[Wrong] = []
    frontier, seen = [child], {(id(child), c.node.next_functions[slot][1])}
    for _ in range(MAX_INNER_DEPTH):
        below = []
        for node in frontier:
            if type(node).__name__ == "AccumulateGrad":
                continue
            labels = c.labels_of(node)
            for (inner, output), label in zip(node.next_functions, labels, strict=False):
                if inner is None or (id(inner), output) in seen:
                    continue
                seen.add((id(inner), output))
                below.append(inner)
                value = c.value_at(inner, output)
                if value is None or value.shape != own.shape or torch.equal(value, own):
                    continue
                wrongs.append((f"{op_name(type(c.node).__name__)}_inner_argument", template.format(argument(label)),
                               derivative(value.detach()), lesson))
        frontier = below
    return wrongs[:3]


# Slips that can equal the right factor identically, not only at some values (the other factor of
# x·e^y differentiated: e^y again): no choice of values tells them apart, so the author is not told to.
ALWAYS_EQUAL_SOMEWHERE = frozenset({"mul_other_differentiated"})


def factor_mutations(c: NodeContext, slot: int) -> tuple[RightDerivative | None, list[Mutation]]:
    """The right factor of this edge and the catalogued wrong ones."""
    node_class = type(c.node).__name__
    if node_class in CONSTANT_FACTORS:
        factors = CONSTANT_FACTORS[node_class]
        factor = factors[slot] if slot < len(factors) else 1.0
        return RightDerivative(slot, format_number(factor), torch.tensor(factor)), []
    rule = _RULES.get(node_class)
    found = rule(c, slot) if rule is not None else None
    if found is None:
        return None, []
    right_text, right, wrongs = found
    wrongs = [*wrongs, *inner_argument_wrongs(c, slot)]
    mutations, passes = [], []
    target = c.right[slot]
    for rule_id, used_text, used, lesson in wrongs:
        if target is None or not (torch.isfinite(used).all() and torch.isfinite(right).all()):
            continue
        if used.shape == right.shape and torch.allclose(used.double(), right.double()):
            if used_text != right_text and rule_id not in ALWAYS_EQUAL_SOMEWHERE:  # n·x for x² is right, no slip
                passes.append(used_text)  # 3·x for d(x³)/dx at x = 1: the slip cannot be seen at these values
            continue
        wrong = (c.grad * used).sum_to_size(target.shape) if (c.grad * used).shape != target.shape else c.grad * used
        mutations.append(Mutation((slot,), rule_id, used_text, right_text, lesson, c.replaced(slot, wrong),
                                  used_value=used, right_value=right))
    return RightDerivative(slot, right_text, right, tuple(dict.fromkeys(passes))), mutations
