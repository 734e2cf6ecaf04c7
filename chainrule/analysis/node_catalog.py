"""Stable ids, names and forward values for the autograd nodes of one run.

Op ids come from the position of the forward call that created the node
(`op7`), so the same program re-run under a counterfactual mode gives the same
ids and paths can be compared across runs. Leaves are named after the variable
that holds them in the program's namespace."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from chainrule.analysis.op_recording import ForwardOp, ProgramRun
from chainrule.op_names import op_name
from chainrule.values import format_number

MAX_KEPT_ELEMENTS = 256  # larger forward values are not worth a picture label


def is_leaf_node(node: Any) -> bool:
    return type(node).__name__ == "AccumulateGrad"


class NodeCatalog:
    def __init__(self, run: ProgramRun) -> None:
        self.run = run
        self._ops: dict[int, ForwardOp] = {}
        self._indexed = 0
        self._fallback_ids: dict[int, str] = {}
        self._fallback_names: dict[int, str] = {}
        self._kept: list[Any] = []  # keeps id() of named objects from being reused
        self._retained: dict[tuple[int, int], str | None] = {}
        # labels of nodes and the placeholder symbol, kept while the program is paused in one backward
        # call (the namespace they read does not change then); refresh() and forget_labels() drop them
        self.labels: dict[tuple[int, ...], str] = {}
        self._names: dict[int, tuple[torch.Tensor, str | None]] | None = None  # tensor_name's, while paused
        # id(node) → (node, its outputs' shapes): autograd builds `_input_metadata` anew at every read, and
        # a node with many outputs (`for row in W`) is read once per output
        self._shapes: dict[int, tuple[Any, list[list[int]]]] = {}

    def forget_labels(self) -> None:
        self.labels.clear()
        self._names = None

    def refresh(self) -> None:
        """Index forward ops recorded since the last call."""
        self.forget_labels()
        self._names = {}
        for op in self.run.ops[self._indexed :]:
            if op.grad_fn is not None:
                self._ops.setdefault(id(op.grad_fn), op)
        self._indexed = len(self.run.ops)

    def op_for(self, node: Any) -> ForwardOp | None:
        return self._ops.get(id(node))

    def node_id(self, node: Any, output: int = 0) -> str:
        """`op7`; output k > 0 of an op with several outputs on one autograd node is a node of its own,
        `op7.2` (the b of a, b = x.chunk(2), the third row of `for row in x`): it has its own value. A call
        whose outputs are on nodes of their own (torch.tensor_split) numbers the second one `op7_1`."""
        if is_leaf_node(node):
            return f"leaf:{self.leaf_name(node.variable)}"
        op = self.op_for(node)
        if op is not None:
            base = f"op{op.seq}_{op.piece}" if op.piece else f"op{op.seq}"
        else:
            if id(node) not in self._fallback_ids:
                # Created inside a composite call we did not see: number it by discovery.
                self._kept.append(node)
                self._fallback_ids[id(node)] = f"inner{len(self._fallback_ids) + 1}"
            base = self._fallback_ids[id(node)]
        return f"{base}.{output}" if output else base

    def node_ids(self, node: Any) -> list[str]:
        """The ids of every output of this node (one, but for an op with several outputs)."""
        return [self.node_id(node, output) for output in range(len(self.output_shapes(node)))]

    def output_shapes(self, node: Any) -> list[list[int]]:
        """The shape of each output of `node` (one for a leaf and for nearly every op)."""
        kept = self._shapes.get(id(node))
        if kept is None or kept[0] is not node:
            shapes = [list(node.variable.shape)] if is_leaf_node(node) else \
                [list(item.shape) for item in getattr(node, "_input_metadata", ())] or [[]]
            kept = self._shapes[id(node)] = (node, shapes)
        return kept[1]

    def node_name(self, node: Any) -> str:
        if is_leaf_node(node):
            return self.leaf_name(node.variable)
        return op_name(type(node).__name__)

    def read_name(self, node: Any, output: int = 0) -> str | None:
        """The name whose .grad autograd fills at this node's output `output`: a leaf's, or a non-leaf
        tensor's the program kept with retain_grad() (its gradient is what reaches the node that made it)."""
        if is_leaf_node(node):
            return self.leaf_name(node.variable)
        tensor = self.retained_tensor(node, output)
        if tensor is None:
            return None
        if (id(node), output) not in self._retained:  # its name, looked up once: backward passes ask per node
            self._retained[id(node), output] = self.tensor_name(tensor)
        return self._retained[id(node), output]

    def retained_tensor(self, node: Any, output: int = 0) -> torch.Tensor | None:
        """The non-leaf tensor this node made (its output `output`) when the program retains its gradient."""
        op = self.op_for(node)
        tensor = op.output_tensor(output) if op is not None and not is_leaf_node(node) else None
        return tensor if isinstance(tensor, torch.Tensor) and tensor.retains_grad else None

    def leaf_name(self, tensor: torch.Tensor) -> str:
        name = self.tensor_name(tensor)
        if name is not None:
            return name
        if id(tensor) not in self._fallback_names:
            self._kept.append(tensor)
            self._fallback_names[id(tensor)] = f"leaf{len(self._fallback_names) + 1}"
        return self._fallback_names[id(tensor)]

    def constant_label(self, saved: Any) -> str | None:
        """How an operand autograd saved reads in a formula: the program's name for that tensor, else the
        number of a one-element tensor or a Python number; None for anything else."""
        if isinstance(saved, torch.Tensor):
            return self.tensor_name(saved) or (format_number(float(saved)) if saved.numel() == 1 else None)
        if isinstance(saved, (int, float)) and not isinstance(saved, bool):
            return self.number_label(float(saved))
        return None

    def number_label(self, number: float) -> str:
        """A Python number as a formula writes it: the exercise's parameter c when it holds exactly this
        (not whole) value, so a formula answer in c reads alike at every point; else the number."""
        return self.run.number_params.get(number) or format_number(number)

    def operand_label(self, saved: Any) -> str:
        """A saved tensor operand as it reads in an op's formula (`x` in w*x, the 4 in 4*x); "c" otherwise."""
        return (self.constant_label(saved) if isinstance(saved, torch.Tensor) else None) or "c"

    def tensor_name(self, tensor: torch.Tensor) -> str | None:
        """The program's variable for this very tensor (identity, not value),
        or a module parameter such as `layer.weight`."""
        if self._names is None:
            return self._tensor_name(tensor)
        if id(tensor) not in self._names:  # the tensor is kept with its name: its id() is not reused meanwhile
            self._names[id(tensor)] = (tensor, self._tensor_name(tensor))
        return self._names[id(tensor)][1]

    def _tensor_name(self, tensor: torch.Tensor) -> str | None:
        namespace = self.run.namespace
        for name, value in namespace.items():
            if value is tensor and not name.startswith("_"):
                return name
        for name, value in namespace.items():
            if isinstance(value, torch.nn.Module) and not name.startswith("_"):
                for param_name, param in value.named_parameters():
                    if param is tensor:
                        return f"{name}.{param_name}"
        return None

    def forward_value(self, node: Any, output: int = 0) -> torch.Tensor | None:
        if is_leaf_node(node):
            return node.variable.detach()
        op = self.op_for(node)
        return op.output_value(output) if op is not None else None

    def gradient_hooks(self, node: Any, output: int = 0) -> list[Any]:
        """The program's register_hook functions on the tensor this node produced (its output `output`; a
        leaf's own tensor): autograd applies them to the gradient arriving there, so every re-run by hand
        must too."""
        if is_leaf_node(node):
            tensor = node.variable
        else:
            op = self.op_for(node)
            tensor = op.output_tensor(output) if op is not None else None
        hooks = getattr(tensor, "_backward_hooks", None) if tensor is not None else None
        return list(hooks.values()) if hooks else []

    def output_tensor_name(self, node: Any, output: int = 0) -> str | None:
        op = self.op_for(node)
        tensor = op.output_tensor(output) if op is not None else None
        return self.tensor_name(tensor) if tensor is not None else None


def output_count(node: Any) -> int:
    """How many outputs an autograd node made: 2 for x.chunk(2), 1 for nearly every op and for a leaf."""
    return 1 if is_leaf_node(node) else max(1, len(getattr(node, "_input_metadata", ())))


def output_formula(
    node: Any, output: int, inputs: list[str], grouped: Callable[[str], str], shapes: list[list[int]],
) -> str:
    """How output `output` of an op with several outputs reads: `x[2]` for a row of `for row in x` or of
    x.unbind(), `x[2:4]` for a piece of x.chunk() or x.split(), `std_mean(x)[1]` otherwise. `inputs` are
    the op's inputs as they read; `grouped` puts parentheses around one that needs them before `[`;
    `shapes` are the shapes of the op's outputs."""
    kind = type(node).__name__
    if len(inputs) != 1:
        return f"{op_name(kind)}({', '.join(inputs)})[{output}]"
    operand = grouped(inputs[0])
    if kind == "UnbindBackward0" and output < len(shapes):
        dim = _dim(node, len(shapes[output]) + 1)
        return f"{operand}[{':, ' * dim}{output}]"
    if kind in ("SplitBackward0", "SplitWithSizesBackward0") and output < len(shapes) and shapes[output]:
        dim = _dim(node, len(shapes[output]))
        if 0 <= dim < len(shapes[output]):
            start = sum(shape[dim] for shape in shapes[:output] if len(shape) > dim)
            return f"{operand}[{':, ' * dim}{start}:{start + shapes[output][dim]}]"
    return f"{op_name(kind)}({inputs[0]})[{output}]"


def index_formula(node: Any, operand: str) -> str | None:
    """`x[1:3]`, `x[:, 2]`, `x[-1]`, `x[::2]` for a slice or a select of `operand`; None for another op."""
    kind = type(node).__name__
    if kind == "SliceBackward0":
        start, end, step = (_signed(getattr(node, f"_saved_{name}", None)) for name in ("start", "end", "step"))
        bounds = f"{_bound(start)}:{_bound(end)}" + (f":{step}" if step not in (None, 1) else "")
        return f"{operand}[{':, ' * (_signed(node._saved_dim) or 0)}{bounds}]"
    if kind == "SelectBackward0":
        return f"{operand}[{':, ' * (_signed(node._saved_dim) or 0)}{_signed(node._saved_index)}]"
    return None


def _signed(value: Any) -> int | None:
    """autograd keeps a negative dim or index as an unsigned 64-bit number"""
    if value is None:
        return None
    value = int(value)
    return value - 2**64 if value >= 2**63 else value


def _bound(value: int | None) -> str:
    return "" if value is None or abs(value) >= 2**62 else str(value)


def _dim(node: Any, rank: int) -> int:
    dim = _signed(getattr(node, "_saved_dim", 0)) or 0
    return dim + rank if dim < 0 else dim


def node_shape(node: Any, slot: int = 0) -> list[int]:
    """Shape of the tensor a node produced (output `slot`), from autograd's
    own metadata, so it is known even for nodes we never saw created."""
    metadata = getattr(node, "_input_metadata", ())
    if slot < len(metadata):
        return list(metadata[slot].shape)
    if is_leaf_node(node):
        return list(node.variable.shape)
    return []


def walk_nodes(root: Any) -> list[Any]:
    """Every autograd node reachable from `root`, each once, in a stable order."""
    seen: set[int] = set()
    order: list[Any] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        order.append(node)
        stack.extend(child for child, _ in reversed(getattr(node, "next_functions", ())))
    return order
