"""Catalogued mistakes of ops whose local derivative is not one factor per
entry (reductions, broadcasts, matrix products, softmax, losses, indexing):
each wrong vector-Jacobian product is written out in full."""

from __future__ import annotations

from collections.abc import Callable

import torch

from chainrule.analysis.mutations.building import kept as _kept
from chainrule.analysis.mutations.building import mutation as _mutation
from chainrule.analysis.mutations.convolution import conv_mutations
from chainrule.analysis.mutations.linear_algebra import det_mutations, inverse_mutations, trace_mutations
from chainrule.analysis.mutations.mutation_types import Mutation, NodeContext, RightDerivative
from chainrule.analysis.mutations.normalisation import norm_mutations, vector_norm_mutations
from chainrule.analysis.mutations.probability import logits_loss_mutations, loss_mutations, softmax_mutations
from chainrule.analysis.mutations.robust_losses import robust_loss_mutations
from chainrule.analysis.mutations.scans import cumprod_mutations, cumsum_mutations
from chainrule.analysis.mutations.selection import (
    embedding_mutations,
    gather_mutations,
    index_mutations,
    index_select_mutations,
    max_along_mutations,
    max_pool_mutations,
    repeat_mutations,
)
from chainrule.analysis.mutations.statistics import prod_mutations, std_mutations, var_mutations
from chainrule.op_names import op_name
from chainrule.values import ordinal

Rule = Callable[[NodeContext], tuple[list[RightDerivative], list[Mutation]]]
MEAN = "mean divides by N: each element's local derivative is 1/N"
SUM = "sum passes the gradient unchanged to every element: each element's local derivative is 1, not 1/N"
BROADCAST = ("a tensor broadcast over a dimension is used once per row, so its gradient is the sum of the "
             "gradients of every row")
MATMUL = "the gradient of a @ b is grad @ bᵀ for a and aᵀ @ grad for b: the shapes tell you which side to transpose"
# The other operand dropped is a chain-rule slip, not a transpose one: its rule says what the factor is.
MATMUL_OPERAND = ("the chain rule multiplies by the local derivative of a @ b, which is the other operand: "
                  "grad @ bᵀ for a, aᵀ @ grad for b; it cannot be left out")


def _mean(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    real = c.right[0]
    if real is None:
        return [], []
    count = real.numel() // max(c.grad.numel(), 1)
    right = RightDerivative(0, f"1/N = 1/{count}", torch.tensor(1 / count))
    return [right], _kept(_mutation(c, 0, "mean_normaliser", "1", f"1/{count}", MEAN, real * count),
                          _over_everything(c, real, real.numel()), *_one_dim_count(c, real, count))


def _one_dim_count(c: NodeContext, real: torch.Tensor, count: int) -> list[Mutation | None]:
    """A mean over every entry of a batch divided by one dimension's size (the 3 rows, not the 6 entries):
    it was told as the factor 1/N "counted twice"."""
    if c.grad.numel() != 1 or real.dim() < 2:
        return []
    sizes: dict[int, str] = {}
    for dim, where in ((0, "rows"), (real.dim() - 1, "columns")):
        size = int(real.shape[dim])
        if 1 < size < count:
            sizes.setdefault(size, where)
    shape = "×".join(str(n) for n in real.shape)
    return [_mutation(c, 0, "mean_one_dim", f"1/{size} (one over its {size} {where} only)", f"1/N = 1/{count}",
                      f"mean divides by N, the number of entries: a {shape} tensor has N = {count}, not {size}",
                      real * count / size)
            for size, where in sizes.items()]


def _sum(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    real = c.right[0]
    if real is None:
        return [], []
    count = real.numel() // max(c.grad.numel(), 1)
    right = RightDerivative(0, "1", torch.tensor(1.0))
    return [right], _kept(_mutation(c, 0, "sum_as_mean", f"1/{count}", "1", SUM, real / count),
                          _over_everything(c, real, 1))


def _over_everything(c: NodeContext, real: torch.Tensor, count: int) -> Mutation | None:
    """A reduction along one dim read as over every entry: each entry gets a share of the whole gradient."""
    if c.grad.numel() <= 1:
        return None
    name = op_name(type(c.node).__name__)
    share = f"the sum of the whole gradient{f' over {count}' if count > 1 else ''}, for every entry"
    lesson = (f"{name} along a dimension reduces each slice on its own: an entry's gradient comes from its own "
              "slice's result only, not from every result")
    right = "its own slice's gradient" + (f" over N = {real.numel() // c.grad.numel()}" if count > 1 else "")
    return _mutation(c, 0, "reduced_over_everything", share, right, lesson,
                     torch.full_like(real, float(c.grad.sum()) / count))


def _expand(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    real = c.right[0]
    if real is None or c.grad.numel() == real.numel():
        return [], []
    count = c.grad.numel() // real.numel()
    return [], _kept(
        _mutation(c, 0, "broadcast_averaged", _rows("the mean", count), _rows("the sum", count), BROADCAST,
                  real / count),
        _mutation(c, 0, "broadcast_one_row", "the gradient of the first row only", _rows("the sum", count),
                  BROADCAST, c.grad.reshape(-1, *real.shape)[0] if c.grad.numel() % real.numel() == 0 else real),
    )


def _rows(what: str, count: int) -> str:
    return f"{what} of the gradient over the {count} rows it is broadcast to"


def _broadcast(c: NodeContext) -> list[Mutation]:
    """A binary elementwise op whose input was broadcast (a bias added to every row)."""
    found: list[Mutation] = []
    for slot, real in enumerate(c.right):
        if real is None or real.numel() >= c.grad.numel() or real.numel() == 0:
            continue
        count = c.grad.numel() // real.numel()
        item = _mutation(c, slot, "broadcast_averaged", _rows("the mean", count), _rows("the sum", count),
                         BROADCAST, real / count)
        found.extend(_kept(item))
        if type(c.node).__name__ in ("AddBackward0", "SubBackward0", "AddmmBackward0") and c.grad.dim() > real.dim():
            sign = -1.0 if slot == 1 and type(c.node).__name__ == "SubBackward0" else 1.0
            one_row = sign * c.grad.reshape(-1, *real.shape)[0] if c.grad.numel() % real.numel() == 0 else real
            found.extend(_kept(_mutation(c, slot, "broadcast_one_row", "the gradient of the first row only",
                                         _rows("the sum", count), BROADCAST, one_row)))
    return found


def _matrix(c: NodeContext, a: torch.Tensor | None, b: torch.Tensor | None, slots: tuple[int, int],
            labels: tuple[str, str]) -> list[Mutation]:
    """a's wrong gradients need only b, and b's only a: an operand autograd did not save is no obstacle."""
    g, la, lb = c.grad, labels[0], labels[1]
    candidates: list[tuple[int, str, str, str, torch.Tensor | None]] = []
    if b is not None:
        candidates += [
            (slots[0], "matmul_no_transpose", f"grad @ {lb}", f"grad @ {lb}ᵀ", _maybe(lambda: g @ b)),
            (slots[0], "matmul_wrong_side", f"{lb}ᵀ @ grad", f"grad @ {lb}ᵀ", _maybe(lambda: b.mT @ g)),
            (slots[0], "matmul_operand_one", "grad @ 1ᵀ (the other operand taken as 1)", f"grad @ {lb}ᵀ",
             _maybe(lambda: g @ torch.ones_like(b).mT)),
        ]
    if a is not None:
        candidates += [
            (slots[1], "matmul_no_transpose", f"{la} @ grad", f"{la}ᵀ @ grad", _maybe(lambda: a @ g)),
            (slots[1], "matmul_wrong_side", f"grad @ {la}ᵀ", f"{la}ᵀ @ grad", _maybe(lambda: g @ a.mT)),
            (slots[1], "matmul_operand_one", "1ᵀ @ grad (the other operand taken as 1)", f"{la}ᵀ @ grad",
             _maybe(lambda: torch.ones_like(a).mT @ g)),
        ]
    found: list[Mutation] = []
    for slot, rule, used, right, wrong in candidates:
        if wrong is not None and slot < len(c.right) and c.right[slot] is not None \
                and wrong.shape == c.right[slot].shape:  # type: ignore[union-attr]
            words = MATMUL_OPERAND if rule == "matmul_operand_one" else MATMUL
            found.extend(_kept(_mutation(c, slot, rule, used, right, words, wrong)))
    return found


def _maybe(compute: Callable[[], torch.Tensor]) -> torch.Tensor | None:
    try:
        return compute()
    except RuntimeError:
        return None


def _mm(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    a = c.node._saved_self if c.node._saved_self is not None else c.value_of(0)
    b = c.node._saved_mat2 if c.node._saved_mat2 is not None else c.value_of(1)
    return [], _matrix(c, a, b, (0, 1), (c.labels[0], c.labels[1]))


def _mv(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    """M @ v (MvBackward0) and a · b (DotBackward0) as matrix products of a column."""
    names = ("_saved_self", "_saved_vec") if type(c.node).__name__ == "MvBackward0" else ("_saved_self",
                                                                                        "_saved_tensor")
    a, b = (getattr(c.node, name) for name in names)
    a = a if a is not None else c.value_of(0)
    b = b if b is not None else c.value_of(1)
    if a is None or b is None:
        return [], []
    g = c.grad.reshape(-1, 1)
    if type(c.node).__name__ == "DotBackward0":
        return [], _kept(*(_mutation(c, slot, "matmul_operand_one", "1 (the other operand taken as 1)",
                                     c.labels[1 - slot], MATMUL_OPERAND, c.grad * torch.ones_like(own))
                           for slot, own in enumerate((a, b))))
    found = _matrix(c, a, b.reshape(-1, 1), (0, 1), (c.labels[0], c.labels[1]))
    found += _kept(_mutation(c, 0, "matmul_operand_one", "grad ⊗ 1 (the vector taken as 1)", f"grad ⊗ {c.labels[1]}",
                             MATMUL_OPERAND, g @ torch.ones_like(b).reshape(1, -1)),
                   _mutation(c, 1, "matmul_operand_one", "1ᵀ @ grad (the matrix taken as 1)",
                             f"{c.labels[0]}ᵀ @ grad", MATMUL_OPERAND, (torch.ones_like(a).mT @ g).reshape(-1)))
    return [], found


def _bmm(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    return [], _matrix(c, c.node._saved_self, c.node._saved_mat2, (0, 1), (c.labels[0], c.labels[1]))


def _addmm(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    a, b = c.node._saved_mat1, c.node._saved_mat2
    return [], _broadcast(c) + _matrix(c, a, b, (1, 2), (c.labels[1], c.labels[2]))


def _same_operand(c: NodeContext) -> list[Mutation]:
    """x*x: both edges come from the same tensor; counting it once halves the derivative."""
    children = [child for child, _ in c.node.next_functions]
    if type(c.node).__name__ != "MulBackward0" or len(children) != 2 or children[0] is None \
            or children[0] is not children[1] or c.right[0] is None:
        return []
    u = c.labels[0]
    lesson = (f"{u}·{u} uses {u} twice: each operand contributes its own term, d({u}·{u})/d{u} = {u} + {u} = 2·{u}")
    wrong = (c.right[0], torch.zeros_like(c.right[0]))
    value = c.node._saved_self if c.node._saved_self is not None else c.value_of(0)
    return [Mutation((0, 1), "mul_same_operand_once", u, f"2·{u}", lesson, wrong, used_value=value,
                     right_value=2 * value if value is not None else None)]


def _cat_offsets(c: NodeContext, lesson: str) -> list[Mutation]:
    """1-D cat: a slice taken at another offset, or handed back reversed."""
    found: list[Mutation] = []
    sizes = [item.numel() if item is not None else 0 for item in c.right]
    for slot, real in enumerate(c.right):
        if real is None:
            continue
        found.extend(_kept(_mutation(c, slot, "join_reversed", "its slice reversed", "its own slice", lesson,
                                     real.flip(0))))
        for start in range(c.grad.numel() - sizes[slot] + 1):
            if start != sum(sizes[:slot]):
                found.extend(_kept(_mutation(c, slot, "join_wrong_offset", f"the {ordinal(start + 1)} to "
                                             f"{ordinal(start + sizes[slot])} entries of the gradient",
                                             "its own slice", lesson,
                                             c.grad[start:start + sizes[slot]])))
    return found


def _transposed_back(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    lesson = "a transpose's gradient is transposed back: grad ends up with the input's shape and layout"
    real = c.right[0]
    if real is None or c.grad.numel() != real.numel():
        return [], []
    if c.grad.shape != real.shape:  # a non-square gradient poured into the input's shape, entry by entry
        return [], _kept(_mutation(c, 0, "transpose_reshaped", f"grad reshaped to the shape of {c.labels[0]}",
                                   "gradᵀ", lesson, c.grad.reshape(real.shape)))
    return [], _kept(_mutation(c, 0, "transpose_not_undone", "grad as it is", "gradᵀ", lesson, c.grad))


def _max_reduced(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    lesson = (f"{op_name(type(c.node).__name__)} passes the whole gradient to the entry that wins (the others "
              "get 0), not a share to each")
    real = c.right[0]
    if real is None or c.grad.numel() != 1:
        return [], []
    g = c.grad.reshape(())
    x = c.node._saved_self
    loser = torch.zeros_like(real).reshape(-1)
    if x is not None and x.numel() == real.numel():
        loser[int(x.argmin() if type(c.node).__name__ == "MaxBackward1" else x.argmax())] = g
    return [], _kept(_mutation(c, 0, "max_to_loser", "1 at the entry that loses (the others 0)", "1 at the winner",
                               lesson, loser.reshape(real.shape)) if x is not None else None,
                     _mutation(c, 0, "max_shared", f"1/{real.numel()} to every entry", "1 at the winner", lesson,
                               g * torch.ones_like(real) / real.numel()),
                     _mutation(c, 0, "max_everywhere", "1 at every entry", "1 at the winner", lesson,
                               g * torch.ones_like(real)))


def _view(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    lesson = "a reshape's gradient is the gradient reshaped back, entry for entry, not transposed"
    real = c.right[0]
    if real is None or c.grad.dim() != 2 or real.dim() != 2 or c.grad.mT.shape != real.shape:
        return [], []
    return [], _kept(_mutation(c, 0, "reshape_as_transpose", "gradᵀ", "grad reshaped", lesson, c.grad.mT))


def _joined(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    lesson = "cat/stack hands each input back its own slice of the gradient"
    found: list[Mutation] = []
    if type(c.node).__name__ == "CatBackward0" and c.grad.dim() == 1:
        found.extend(_cat_offsets(c, lesson))
    for slot, real in enumerate(c.right):
        other = c.right[1 - slot] if len(c.right) == 2 else None
        if real is not None and other is not None and other.shape == real.shape:
            found.extend(_kept(_mutation(c, slot, "join_wrong_slice", "the other input's slice", "its own slice",
                                         lesson, other)))
    return [], found


STRUCTURAL: dict[str, Rule] = {
    "MeanBackward0": _mean, "MeanBackward1": _mean, "SumBackward0": _sum, "SumBackward1": _sum,
    "ExpandBackward0": _expand, "MmBackward0": _mm, "MvBackward0": _mv, "DotBackward0": _mv, "BmmBackward0": _bmm,
    "AddmmBackward0": _addmm,
    "SoftmaxBackward0": softmax_mutations, "LogSoftmaxBackward0": softmax_mutations,
    "LogsumexpBackward0": softmax_mutations,
    "MseLossBackward0": loss_mutations, "NllLossBackward0": loss_mutations,
    "BinaryCrossEntropyBackward0": loss_mutations, "L1LossBackward0": loss_mutations,
    "PermuteBackward0": _transposed_back, "TBackward0": _transposed_back,
    "TransposeBackward0": _transposed_back, "SelectBackward0": index_mutations, "IndexBackward0": index_mutations,
    "CatBackward0": _joined, "StackBackward0": _joined, "MaxBackward1": _max_reduced, "MinBackward1": _max_reduced,
    "ViewBackward0": _view, "ReshapeAliasBackward0": _view, "UnsafeViewBackward0": _view,
    "CumsumBackward0": cumsum_mutations, "CumprodBackward0": cumprod_mutations, "GatherBackward0": gather_mutations,
    "MaxBackward0": max_along_mutations, "MinBackward0": max_along_mutations,
    "MaxPool2DWithIndicesBackward0": max_pool_mutations, "NativeLayerNormBackward0": norm_mutations,
    "LinalgVectorNormBackward0": vector_norm_mutations, "HuberLossBackward0": robust_loss_mutations,
    "SmoothL1LossBackward0": robust_loss_mutations, "NativeBatchNormBackward0": norm_mutations,
    "EmbeddingBackward0": embedding_mutations, "IndexSelectBackward0": index_select_mutations,
    "RepeatBackward0": repeat_mutations, "VarBackward0": var_mutations, "StdBackward0": std_mutations,
    "ProdBackward0": prod_mutations, "ProdBackward1": prod_mutations,
    "BinaryCrossEntropyWithLogitsBackward0": logits_loss_mutations, "ConvolutionBackward0": conv_mutations,
    "LinalgDetBackward0": det_mutations, "LinalgInvExBackward0": inverse_mutations, "TraceBackward0": trace_mutations,
    "AmaxBackward0": max_along_mutations, "AminBackward0": max_along_mutations,
}
BINARY_ELEMENTWISE = frozenset({"AddBackward0", "SubBackward0", "MulBackward0", "DivBackward0"})


def structural_mutations(c: NodeContext) -> tuple[list[RightDerivative], list[Mutation]]:
    node_class = type(c.node).__name__
    rights, mutations = STRUCTURAL[node_class](c) if node_class in STRUCTURAL else ([], [])
    if node_class in BINARY_ELEMENTWISE:
        mutations = [*mutations, *_broadcast(c), *_same_operand(c)]
    return rights, mutations
