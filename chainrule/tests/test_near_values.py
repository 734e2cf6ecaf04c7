"""A slip's prediction as nested lists: thousands of them per part, each a few entries off the right
gradient, so the rows a slip leaves alone are the right gradient's own lists, shared."""

from __future__ import annotations

import numpy as np

from chainrule.analysis.hypotheses import GradientFacts, near_values, rounded


def _facts(grad: np.ndarray) -> GradientFacts:
    return GradientFacts(part="W.grad", leaf="W", leaf_id="leaf:W", grad=grad, paths=[])


def test_a_slip_in_one_row_gives_that_row_anew_and_shares_the_others() -> None:
    grad = np.arange(1.0, 65.0).reshape(8, 8) / 3
    one_row = np.zeros((8, 8))
    one_row[5, 2:6] = 0.5
    one_entry = np.zeros((8, 8))
    one_entry[0, 7] = -1.0
    facts = _facts(grad)
    [(value, array), (other, _)] = near_values(facts, [one_row, one_entry])
    assert value == rounded(grad + one_row).tolist() == array.tolist()
    assert other == rounded(grad + one_entry).tolist()
    right = facts.rounded_value
    assert isinstance(right, list) and isinstance(value, list) and isinstance(other, list)
    assert right == rounded(grad).tolist()  # not changed in place
    assert all(value[row] is right[row] for row in range(8) if row != 5) and value[5] is not right[5]
    assert all(other[row] is right[row] for row in range(1, 8)) and other[0] is not right[0]


def test_a_slip_in_a_vector_or_a_3d_gradient_is_patched_the_same_way() -> None:
    vector = np.linspace(-1, 1, 9)
    delta = np.zeros(9)
    delta[[1, 7]] = [0.25, -0.25]
    [(value, _)] = near_values(_facts(vector), [delta])
    assert value == rounded(vector + delta).tolist()
    cube = np.arange(24.0).reshape(2, 3, 4) / 7
    change = np.zeros((2, 3, 4))
    change[1, 2, 3] = 1.0
    facts = _facts(cube)
    [(value, _)] = near_values(facts, [change])
    assert value == rounded(cube + change).tolist()
    assert isinstance(value, list) and isinstance(facts.rounded_value, list)
    assert value[0] is facts.rounded_value[0]
