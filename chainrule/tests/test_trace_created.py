"""Where a leaf was made, in the program trace: the line the feedback points a student to."""

from __future__ import annotations

from chainrule.analysis.trace_summary import trace_program

PROGRAM = """
for _ in range(3):
    t = torch.zeros(2)
    del t
w = torch.ones(2, requires_grad=True)
L = (w * w).sum()
L.backward()
"""


def test_a_leaf_made_where_a_dropped_temporary_was_is_still_found_on_its_line() -> None:
    """Python reuses a dropped tensor's id for the next one made: the weight made on line 5 is found
    there every time, not only when its id happens to be new."""
    lines = {trace_program(program=PROGRAM, params={}, reads=["w.grad"])["leaves"]["w"]["line"] for _ in range(12)}
    assert lines == {5}
