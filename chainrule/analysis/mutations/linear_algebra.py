"""Catalogued mistakes of the matrix functions (det, inverse, trace): where the
transpose goes, the sign, and which factor is the function's own value."""

from __future__ import annotations

import torch

from chainrule.analysis.mutations.building import kept, mutation
from chainrule.analysis.mutations.mutation_types import Mutation, NodeContext, RightDerivative

Found = tuple[list[RightDerivative], list[Mutation]]
DET = "d det(A)/dA = det(A)·A⁻ᵀ (Jacobi's formula): the inverse transposed, times the determinant"
INVERSE = "d(A⁻¹) = -A⁻¹·dA·A⁻¹, so the gradient of A is -A⁻ᵀ @ grad @ A⁻ᵀ: a minus sign and both transposes"
TRACE = "trace(A) adds the diagonal only: its gradient is grad on the diagonal and 0 elsewhere"


def det_mutations(c: NodeContext) -> Found:
    a, det = c.node._saved_A, c.node._saved_result
    if c.right[0] is None or a is None or det is None or a.dim() != 2:
        return [], []
    try:
        inverse = torch.linalg.inv(a)
    except RuntimeError:  # a singular matrix: no inverse to misplace
        return [], []
    g, u = c.grad, c.labels[0]
    right = f"det({u})·{u}⁻ᵀ"
    return [], kept(mutation(c, 0, "det_no_transpose", f"det({u})·{u}⁻¹ (the transpose left out)", right, DET,
                             g * det * inverse),
                    mutation(c, 0, "det_no_determinant", f"{u}⁻ᵀ (the det(A) factor left out)", right, DET,
                             g * inverse.mT))


def inverse_mutations(c: NodeContext) -> Found:
    inverse = c.node._saved_inverse
    if c.right[0] is None or inverse is None or inverse.dim() != 2:
        return [], []
    g, u = c.grad, c.labels[0]
    right = f"-{u}⁻ᵀ @ grad @ {u}⁻ᵀ"
    return [], kept(mutation(c, 0, "inverse_sign", f"{u}⁻ᵀ @ grad @ {u}⁻ᵀ (no minus sign)", right, INVERSE,
                             inverse.mT @ g @ inverse.mT),
                    mutation(c, 0, "inverse_no_transpose", f"-{u}⁻¹ @ grad @ {u}⁻¹", right, INVERSE,
                             -(inverse @ g @ inverse)),
                    mutation(c, 0, "inverse_power_rule", f"-grad/{u}² entry by entry (as for 1/x)", right, INVERSE,
                             -g * inverse * inverse))


def trace_mutations(c: NodeContext) -> Found:
    real = c.right[0]
    if real is None:
        return [], []
    return [], kept(mutation(c, 0, "trace_everywhere", "grad at every entry", "grad on the diagonal, 0 elsewhere",
                             TRACE, torch.ones_like(real) * c.grad.reshape(())))
