"""Catalogued mistakes of the ops that pick entries (gather, an index with a
repeated entry, max/min along a dimension, max pooling): the gradient goes
back only to the entries picked, added up where one entry is picked twice."""

from __future__ import annotations

import torch

from chainrule.analysis.mutations.building import kept, mutation
from chainrule.analysis.mutations.mutation_types import Mutation, NodeContext, RightDerivative
from chainrule.op_names import op_name

GATHER = ("gather(dim, index) picks along dim: each picked entry's gradient goes back to the very entry it was "
          "read from (the index counts from 0, along the same dim); the others get 0")
REPEATED = ("an entry picked several times is used several times: its gradient is the sum of the gradients of "
            "every use, none overwrites another")
Found = tuple[list[RightDerivative], list[Mutation]]


def _scattered(shape: torch.Size, dim: int, index: torch.Tensor, grad: torch.Tensor) -> torch.Tensor | None:
    try:
        return torch.zeros(shape, dtype=grad.dtype).scatter_add(dim, index, grad)
    except RuntimeError:  # the index does not fit along that dim
        return None


def gather_mutations(c: NodeContext) -> Found:
    real, index = c.right[0], c.node._saved_index
    if real is None or index is None:
        return [], []
    dim, g, shape = int(c.node._saved_dim) % max(real.dim(), 1), c.grad, real.shape
    right = f"grad at the entries gather read, along dim {dim}"
    found = [mutation(c, 0, "gather_wrong_dim", f"grad scattered along dim {other} instead", right, GATHER, wrong)
             for other in range(real.dim()) if other != dim
             and (wrong := _scattered(shape, other, index, g)) is not None]
    if int(index.max()) + 1 < shape[dim]:
        found.append(_shifted(c, dim, index + 1, "one entry later (the index read as counting from 1)", right))
    if int(index.min()) >= 1:
        found.append(_shifted(c, dim, index - 1, "one entry earlier", right))
    try:
        row = g.sum(dim, keepdim=True).expand(shape)
    except RuntimeError:
        row = None
    if row is not None:
        found.append(mutation(c, 0, "gather_whole_row", f"each row's grad copied to every entry along dim {dim}",
                              right, GATHER, row))
    return [], kept(*found)


def _shifted(c: NodeContext, dim: int, index: torch.Tensor, where: str, right: str) -> Mutation | None:
    wrong = _scattered(c.right[0].shape, dim, index, c.grad)  # type: ignore[union-attr]
    return mutation(c, 0, "gather_off_by_one", f"grad put {where}", right, GATHER, wrong) if wrong is not None else None


def _one_index(c: NodeContext) -> tuple[int, torch.Tensor] | None:
    """x[idx] or x[:, idx]: one integer index vector at one dim, the others whole."""
    indices = getattr(c.node, "_saved_indices", None) or ()
    given = [(dim, item) for dim, item in enumerate(indices) if item is not None]
    if len(given) != 1:
        return None
    dim, index = given[0]
    if index.dim() != 1 or index.dtype not in (torch.int64, torch.int32):
        return None
    return dim, index.long()


def _one_use(c: NodeContext, dim: int, index: torch.Tensor, last: bool) -> torch.Tensor:
    real = c.right[0]
    assert real is not None
    wrong = torch.zeros_like(real)
    positions = range(len(index)) if last else reversed(range(len(index)))
    for position in positions:  # a later write replaces an earlier one
        wrong.select(dim, int(index[position])).copy_(c.grad.select(dim, position))
    return wrong


def _repeated_uses(c: NodeContext, dim: int, index: torch.Tensor) -> list[Mutation | None]:
    """Only the last or the first use kept of an entry picked twice (index, index_select, embedding)."""
    real = c.right[0]
    if real is None or len(set(index.tolist())) == len(index) or c.grad.dim() != real.dim() \
            or c.grad.shape[dim] != len(index):
        return []
    right = "the sum of the gradients of every use of a repeated entry"
    return [mutation(c, 0, "index_last_use", "only the last use of a repeated entry (a later use overwrites)",
                     right, REPEATED, _one_use(c, dim, index, last=True)),
            mutation(c, 0, "index_first_use", "only the first use of a repeated entry", right, REPEATED,
                     _one_use(c, dim, index, last=False))]


def index_select_mutations(c: NodeContext) -> Found:
    index = c.node._saved_index
    if index is None or index.dim() > 1:
        return [], []
    return [], kept(*_repeated_uses(c, int(c.node._saved_dim), index.reshape(-1).long()))


def embedding_mutations(c: NodeContext) -> Found:
    """An embedding's rows looked up as E[ids]: the same beliefs over a repeated id."""
    real, ids = c.right[0], c.node._saved_indices
    if real is None or ids is None or real.dim() != 2:
        return [], []
    flat = ids.reshape(-1).long()
    folded = NodeContext(c.node, [c.grad.reshape(len(flat), real.shape[1])], c.right, c.labels, c.value_of,
                         c.labels_of)
    return [], kept(*_repeated_uses(folded, 0, flat))


def repeat_mutations(c: NodeContext) -> Found:
    """x.repeat(…): every copy is a use of x, so its gradient sums the copies' gradients."""
    real = c.right[0]
    repeats = list(c.node._saved_repeats)
    if real is None:
        return [], []
    sizes = [1] * (len(repeats) - real.dim()) + list(real.shape)
    split = c.grad.reshape([n for pair in zip(repeats, sizes, strict=True) for n in pair])
    copies = tuple(range(0, 2 * len(repeats), 2))
    first = split[tuple(0 if axis in copies else slice(None) for axis in range(split.dim()))]
    total = 1
    for count in repeats:
        total *= count
    lesson = "repeat uses the tensor once per copy: its gradient is the sum of the gradients of every copy"
    right = f"the sum of grad over the {total} copies"
    return [], kept(mutation(c, 0, "repeat_first_copy", "the gradient of the first copy only", right, lesson,
                             first.reshape(real.shape)),
                    mutation(c, 0, "repeat_averaged", f"the mean of grad over the {total} copies", right, lesson,
                             split.sum(copies).reshape(real.shape) / total))


def index_mutations(c: NodeContext) -> Found:
    lesson = "indexing passes the gradient only to the entries it picked; the others get 0"
    real = c.right[0]
    if real is None:
        return [], []
    found: list[Mutation | None] = []
    if c.grad.numel() == 1:
        found.append(mutation(c, 0, "index_everywhere", "the gradient at every entry", "only at the picked entry",
                              lesson, torch.ones_like(real) * c.grad.reshape(())))
    picked = _one_index(c)
    if picked is not None:
        found += _repeated_uses(c, *picked)
    return [], kept(*found)


def _kept_dim(c: NodeContext) -> tuple[torch.Tensor, int] | None:
    """The arriving gradient with the reduced dim kept, and that dim (amax may reduce several: None)."""
    dims = c.node._saved_dim
    if isinstance(dims, (tuple, list)):
        if len(dims) != 1:
            return None
        dims = dims[0]
    dim = int(dims)
    return (c.grad if bool(c.node._saved_keepdim) else c.grad.unsqueeze(dim)), dim


def max_along_mutations(c: NodeContext) -> Found:
    """max/min(x, dim): the whole gradient to the winner of each slice."""
    real, kept_dim = c.right[0], _kept_dim(c)
    if real is None or kept_dim is None:
        return [], []
    g, dim = kept_dim
    name = op_name(type(c.node).__name__)
    size = real.shape[dim]
    lesson = (f"{name} along a dimension passes each slice's whole gradient to the entry that wins it (the others "
              "get 0), not a share to each, not to every entry")
    right = "1 at the winner of each slice, 0 elsewhere"
    found = [mutation(c, 0, "max_shared", f"1/{size} to every entry of each slice", right, lesson,
                      g.expand(real.shape) / size),
             mutation(c, 0, "max_everywhere", "1 at every entry of each slice", right, lesson, g.expand(real.shape))]
    x = c.value_of(0)
    if x is not None and x.shape == real.shape:
        biggest = name in ("max", "amax")
        loser = x.argmin(dim, keepdim=True) if biggest else x.argmax(dim, keepdim=True)
        other = "smallest" if biggest else "largest"
        found.append(mutation(c, 0, "max_to_loser", f"1 at the {other} entry of each slice", right, lesson,
                              torch.zeros_like(real).scatter(dim, loser, g)))
    return [], kept(*found)


def max_pool_mutations(c: NodeContext) -> Found:
    """max pooling: each window's gradient to its largest entry, not shared over the window."""
    real, x = c.right[0], c.node._saved_self
    if real is None or x is None:
        return [], []
    kernel, stride = list(c.node._saved_kernel_size), list(c.node._saved_stride) or list(c.node._saved_kernel_size)
    padding = list(c.node._saved_padding)
    if any(step != 1 for step in c.node._saved_dilation):
        return [], []  # a dilated window is no average pooling's window
    try:
        shared = torch.ops.aten.avg_pool2d_backward(c.grad, x, kernel, stride, padding,
                                                    bool(c.node._saved_ceil_mode), True, None)
    except RuntimeError:
        return [], []
    area = kernel[0] * kernel[1]
    lesson = ("max pooling passes each window's whole gradient to the entry that wins the window (the others get 0),"
              " not a share to each as average pooling does")
    right = "1 at each window's largest entry, 0 elsewhere"
    return [], kept(mutation(c, 0, "max_shared", f"1/{area} to every entry of the window", right, lesson, shared),
                    mutation(c, 0, "max_everywhere", "1 at every entry of the window", right, lesson, shared * area))
