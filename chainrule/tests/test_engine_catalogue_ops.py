"""The catalogue of wrong local derivatives for ops the held-out corpus exposed (cumsum, cumprod,
gather, a repeated index, max along a dim, masked_fill, layer norm, the vector norm, huber_loss,
a 0/1 mask, a root scale, the quotient's S², log_softmax's own term). Each wrong answer is
computed here from the student's belief, by hand, on graphs unlike the corpus's."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
import torch
import torch.nn.functional as F  # the conventional alias

from chainrule import Diagnosis
from chainrule.tests.program_diagnosis import diagnose


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    """Torch single-threaded, as in the sandbox: a convolution or a batch norm would otherwise start an
    OpenMP team in the test process, and a later test that forks it (the code harness) would hang."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def told(diagnosis: Diagnosis) -> tuple[str, list[str] | None, str | None]:
    return diagnosis.kind, diagnosis.detail.get("edge"), diagnosis.detail.get("rule")


XS = [1.0, -2.0, 0.5, 3.0]
CUMSUM = "x = torch.tensor(xs, requires_grad=True)\nL = (torch.cumsum(x, 0) * torch.tensor(ws)).sum()\nL.backward()\n"
WS = [2.0, -1.0, 0.5, 1.0]


def test_cumsum_summed_forwards_instead_of_from_the_end() -> None:
    forwards = torch.tensor(WS).cumsum(0).tolist()  # the right one runs from the end: [2.5, 0.5, 1.5, 1]
    diagnosis = diagnose(CUMSUM, {"xs": XS, "ws": WS}, "x.grad", forwards)
    assert told(diagnosis) == ("wrong_local_derivative", ["x", "cumsum"], "cumsum_forward")
    assert "cumsum taken backwards" in diagnosis.message


def test_cumprod_without_the_later_products() -> None:
    program = "x = torch.tensor(xs, requires_grad=True)\nL = torch.cumprod(x, 0).sum()\nL.backward()\n"
    xs = [2.0, -1.0, 3.0]
    prefix = [2.0, -2.0, -6.0]
    own_only = [p / x for p, x in zip(prefix, xs, strict=True)]  # d pᵢ/d xᵢ only
    diagnosis = diagnose(program, {"xs": xs}, "x.grad", own_only)
    assert told(diagnosis) == ("wrong_local_derivative", ["x", "cumprod"], "cumprod_own_entry")


GATHER = ("Z = torch.tensor(zs, requires_grad=True)\nL = (Z.gather(1, torch.tensor([[1], [0]])) * "
          "torch.tensor([[3.0], [-2.0]])).sum()\nL.backward()\n")
ZS = [[0.5, 1.0, -1.0], [2.0, 0.0, 1.5]]


def test_gather_copied_to_the_whole_row() -> None:
    diagnosis = diagnose(GATHER, {"zs": ZS}, "Z.grad", [[3.0, 3.0, 3.0], [-2.0, -2.0, -2.0]])
    assert told(diagnosis) == ("wrong_local_derivative", ["Z", "gather"], "gather_whole_row")


def test_gather_one_column_late() -> None:
    diagnosis = diagnose(GATHER, {"zs": ZS}, "Z.grad", [[0.0, 0.0, 3.0], [0.0, -2.0, 0.0]])
    assert told(diagnosis) == ("wrong_local_derivative", ["Z", "gather"], "gather_off_by_one")


def test_a_repeated_index_counted_at_its_last_use_only() -> None:
    program = ("E = torch.tensor(es, requires_grad=True)\nrows = E[torch.tensor([0, 2, 0])]\n"
               "L = (rows * torch.tensor(cs)).sum()\nL.backward()\n")
    cs = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    last = [[5.0, 6.0], [0.0, 0.0], [3.0, 4.0]]  # row 0 used at positions one and three: only the third kept
    diagnosis = diagnose(program, {"es": [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], "cs": cs}, "E.grad", last)
    assert told(diagnosis) == ("wrong_local_derivative", ["E", "index"], "index_last_use")
    assert "sum of the gradients of every use" in diagnosis.message


def test_max_along_a_dim_shared_over_the_slice() -> None:
    program = ("x = torch.tensor(xs, requires_grad=True)\nm = x.max(dim=0).values\n"
               "L = (m * torch.tensor([1.0, -3.0])).sum()\nL.backward()\n")
    xs = [[1.0, 4.0], [2.0, -1.0], [0.0, 0.5]]
    diagnosis = diagnose(program, {"xs": xs}, "x.grad", [[1 / 3, -1.0]] * 3)
    assert told(diagnosis) == ("wrong_local_derivative", ["x", "max"], "max_shared")


def test_masked_fill_read_backwards() -> None:
    program = ("x = torch.tensor(xs, requires_grad=True)\ny = x.masked_fill(x < 0, 0.0)\n"
               "L = (y * torch.tensor([1.0, 2.0, 3.0])).sum()\nL.backward()\n")
    diagnosis = diagnose(program, {"xs": [1.0, -1.0, 2.0]}, "x.grad", [0.0, 2.0, 0.0])
    assert told(diagnosis) == ("wrong_local_derivative", ["x", "masked_fill"], "masked_fill_inverted")


LAYER_NORM = ("x = torch.tensor(xs, requires_grad=True)\nw = torch.tensor(ws, requires_grad=True)\n"
              "y = F.layer_norm(x, (3,), weight=w)\nL = (y * torch.tensor(cs)).sum()\nL.backward()\n")
LN = {"xs": [[1.0, 2.0, 4.0], [0.0, -1.0, 0.5]], "ws": [1.5, -1.0, 0.5], "cs": [[1.0, 0.0, -2.0], [0.5, 3.0, 1.0]]}


def test_layer_norm_statistics_taken_as_constants() -> None:
    x, w, c = (torch.tensor(LN[key]) for key in ("xs", "ws", "cs"))
    sigma = torch.sqrt(x.var(dim=1, unbiased=False, keepdim=True) + 1e-5)
    diagnosis = diagnose("import torch.nn.functional as F\n" + LAYER_NORM, LN, "x.grad", (c * w / sigma).tolist())
    assert told(diagnosis) == ("wrong_local_derivative", ["x", "native_layer_norm"], "norm_statistics_constant")
    assert "the mean's term and the variance's term" in diagnosis.message


def test_the_norms_derivative_taken_as_the_vector() -> None:
    program = "a = torch.tensor(as_, requires_grad=True)\nL = a.norm() * 3\nL.backward()\n"
    diagnosis = diagnose(program, {"as_": [3.0, 4.0]}, "a.grad", [9.0, 12.0])  # 3·a, not 3·a/‖a‖
    assert told(diagnosis) == ("wrong_local_derivative", ["a", "linalg_vector_norm"], "norm_not_divided")


def test_huber_linear_everywhere() -> None:
    program = ("w = torch.tensor(w0, requires_grad=True)\nx = torch.tensor(xs)\n"
               "L = F.huber_loss(w * x, torch.tensor(ts), delta=0.5)\nL.backward()\n")
    xs, ts, w0 = [1.0, 2.0, -1.0], [0.9, 0.0, 1.0], 1.0
    residuals = [w0 * x - t for x, t in zip(xs, ts, strict=True)]  # 0.1 (inside), 2, -2 (outside)
    linear = sum(0.5 * math.copysign(1, r) * x for r, x in zip(residuals, xs, strict=True)) / 3
    diagnosis = diagnose("import torch.nn.functional as F\n" + program, {"w0": w0, "xs": xs, "ts": ts}, "w.grad",
                         linear)
    assert told(diagnosis) == ("wrong_local_derivative", ["mul", "huber_loss"], "robust_linear")


def test_a_dropout_mask_read_backwards() -> None:
    program = ("x = torch.tensor(xs, requires_grad=True)\nm = torch.tensor([1.0, 0.0, 1.0])\n"
               "L = ((x * m - torch.tensor([0.5, 1.0, 0.0])) ** 2).sum()\nL.backward()\n")
    # the gradient arriving at x·m is 2(x·m - t) = [1, -2, -2]; the kept entries are the first and the third
    diagnosis = diagnose(program, {"xs": [1.0, 2.0, -1.0]}, "x.grad", [0.0, -2.0, 0.0])
    assert told(diagnosis) == ("wrong_local_derivative", ["x", "mul"], "mul_mask_inverted")


@pytest.mark.parametrize("scale", ["/ math.sqrt(8)", "* (1 / math.sqrt(8))"])
def test_a_root_scale_used_without_its_root(scale: str) -> None:
    program = f"import math\nq = torch.tensor(qs, requires_grad=True)\nL = (q {scale}).sum() * 2\nL.backward()\n"
    diagnosis = diagnose(program, {"qs": [1.0, -1.0]}, "q.grad", [2 / 8, 2 / 8])  # 1/d for 1/√d
    assert told(diagnosis)[2] == "scale_root_dropped" and "square root" in diagnosis.message


def test_the_quotients_denominator_squared_taken_as_itself() -> None:
    program = ("x = torch.tensor(xs, requires_grad=True)\ns = x.sum()\nL = (x / s * torch.tensor(cs)).sum()\n"
               "L.backward()\n")
    xs, cs = [1.0, 3.0], [2.0, -1.0]
    total = sum(xs)
    by_sum = -sum(c * x for c, x in zip(cs, xs, strict=True)) / total  # -Σ c x / S instead of / S²
    answer = [c / total + by_sum for c in cs]
    diagnosis = diagnose(program, {"xs": xs, "cs": cs}, "x.grad", answer)
    assert told(diagnosis) == ("wrong_local_derivative", ["sum", "div"], "div_denominator_unsquared")


def test_log_softmax_without_grads_own_term() -> None:
    program = "z = torch.tensor(zs, requires_grad=True)\nL = -torch.log_softmax(z, dim=0)[0]\nL.backward()\n"
    zs = [0.5, -1.0, 2.0]
    softmax = F.softmax(torch.tensor(zs), dim=0).tolist()  # the -1 at the target forgotten
    diagnosis = diagnose(program, {"zs": zs}, "z.grad", softmax)
    assert told(diagnosis) == ("wrong_local_derivative", ["z", "log_softmax"], "log_softmax_normaliser_only")


def test_cross_entropy_through_softmax_select_log_without_the_target_term() -> None:
    """The same loss written -log(softmax(z)[t]): answering p (the -1 at the target forgotten) was told
    as 'the forward value of p', with nothing about the target."""
    program = ("z = torch.tensor(zs, requires_grad=True)\np = torch.softmax(z, dim=0)\nL = -torch.log(p[1])\n"
               "L.backward()\n")
    zs = [1.0, 2.0, 0.5]
    diagnosis = diagnose(program, {"zs": zs}, "z.grad", F.softmax(torch.tensor(zs), dim=0).tolist())
    assert told(diagnosis) == ("wrong_local_derivative", ["z", "softmax"], "softmax_normaliser_only")
    assert "the -1 at the target" in diagnosis.message


def test_batch_norm_variance_taken_as_a_constant() -> None:
    program = ("import torch.nn.functional as F\nx = torch.tensor(xs, requires_grad=True)\n"
               "y = F.batch_norm(x, None, None, training=True)\nL = (y * torch.tensor(cs)).sum()\nL.backward()\n")
    xs, cs = [[1.0, 2.0], [3.0, -1.0], [0.5, 0.0]], [[1.0, -1.0], [2.0, 0.5], [0.0, 3.0]]
    x, c = torch.tensor(xs), torch.tensor(cs)
    sigma = torch.sqrt(x.var(dim=0, unbiased=False) + 1e-5)
    answer = ((c - c.mean(0)) / sigma).tolist()  # the mean's term kept, the variance's dropped
    diagnosis = diagnose(program, {"xs": xs, "cs": cs}, "x.grad", answer)
    assert told(diagnosis) == ("wrong_local_derivative", ["x", "native_batch_norm"], "norm_variance_constant")


def test_the_unbiased_variance_divided_by_n() -> None:
    program = "x = torch.tensor(xs, requires_grad=True)\nL = x.var()\nL.backward()\n"
    xs = [1.0, 2.0, 6.0]
    mean = sum(xs) / 3
    diagnosis = diagnose(program, {"xs": xs}, "x.grad", [2 * (x - mean) / 3 for x in xs])  # N, not N - 1
    assert told(diagnosis) == ("wrong_local_derivative", ["x", "var"], "var_correction")


def test_a_products_derivative_taken_as_the_whole_product() -> None:
    program = "x = torch.tensor(xs, requires_grad=True)\nL = x.prod()\nL.backward()\n"
    diagnosis = diagnose(program, {"xs": [2.0, -3.0, 0.5]}, "x.grad", [-3.0, -3.0, -3.0])
    assert told(diagnosis) == ("wrong_local_derivative", ["x", "prod"], "prod_not_divided")


def test_silu_without_the_product_rule() -> None:
    program = "import torch.nn.functional as F\nx = torch.tensor(xs, requires_grad=True)\nF.silu(x).sum().backward()\n"
    xs = [0.5, -1.5]
    diagnosis = diagnose(program, {"xs": xs}, "x.grad", torch.sigmoid(torch.tensor(xs)).tolist())
    assert told(diagnosis) == ("wrong_local_derivative", ["x", "silu"], "silu_first_term")


def test_an_embedding_row_looked_up_twice_counted_once() -> None:
    program = ("import torch.nn.functional as F\nE = torch.tensor(es, requires_grad=True)\n"
               "h = F.embedding(torch.tensor([2, 0, 2]), E)\nL = (h * torch.tensor(cs)).sum()\nL.backward()\n")
    cs = [[1.0, -1.0], [0.5, 2.0], [3.0, 1.0]]
    first_only = [[0.5, 2.0], [0.0, 0.0], [1.0, -1.0]]
    diagnosis = diagnose(program, {"es": [[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]], "cs": cs}, "E.grad", first_only)
    assert told(diagnosis) == ("wrong_local_derivative", ["E", "embedding"], "index_first_use")


def test_binary_cross_entropy_on_logits_without_the_sigmoid() -> None:
    program = ("import torch.nn.functional as F\nz = torch.tensor(zs, requires_grad=True)\n"
               "L = F.binary_cross_entropy_with_logits(z, torch.tensor(ys))\nL.backward()\n")
    zs, ys = [0.5, -2.0], [1.0, 0.0]
    diagnosis = diagnose(program, {"zs": zs, "ys": ys}, "z.grad", [(z - y) / 2 for z, y in zip(zs, ys, strict=True)])
    assert told(diagnosis) == ("wrong_local_derivative", ["z", "binary_cross_entropy_with_logits"],
                               "logits_no_sigmoid")


def test_a_repeated_tensor_given_one_copys_gradient() -> None:
    program = ("x = torch.tensor(xs, requires_grad=True)\nr = x.repeat(3)\n"
               "L = (r * torch.arange(6.0)).sum()\nL.backward()\n")
    diagnosis = diagnose(program, {"xs": [1.0, 2.0]}, "x.grad", [0.0, 1.0])  # copy one only: right is [6, 9]
    assert told(diagnosis) == ("wrong_local_derivative", ["x", "repeat"], "repeat_first_copy")


def test_a_convolutions_input_gradient_with_the_kernel_flipped() -> None:
    program = ("import torch.nn.functional as F\nx = torch.tensor(xs, requires_grad=True)\nk = torch.tensor(ks)\n"
               "L = (F.conv1d(x.view(1, 1, 4), k.view(1, 1, 2)) * torch.tensor([1.0, -2.0, 3.0])).sum()\n"
               "L.backward()\n")
    ks, g = [2.0, 5.0], [1.0, -2.0, 3.0]
    # y_j = 2·x_j + 5·x_(j+1); a student who flips the kernel sends 5·g_j to x_j and 2·g_j to x_(j+1)
    flipped = [5 * g[0], 2 * g[0] + 5 * g[1], 2 * g[1] + 5 * g[2], 2 * g[2]]
    diagnosis = diagnose(program, {"xs": [0.5, 1.0, -1.0, 2.0], "ks": ks}, "x.grad", flipped)
    assert told(diagnosis) == ("wrong_local_derivative", ["view", "convolution"], "conv_kernel_flipped")


def test_where_with_its_branches_swapped() -> None:
    program = ("a = torch.tensor(as_, requires_grad=True)\nb = torch.tensor(bs, requires_grad=True)\n"
               "L = torch.where(a > b, a * 2, b ** 2).sum()\nL.backward()\n")
    # a wins only at the second entry; a student who swaps the branches gives a its gradient at the others
    diagnosis = diagnose(program, {"as_": [1.0, 3.0, -1.0], "bs": [2.0, 1.0, 0.5]}, "a.grad", [2.0, 0.0, 2.0])
    assert told(diagnosis) == ("wrong_local_derivative", ["mul", "where"], "where_swapped")
