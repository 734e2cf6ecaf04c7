"""Pure pieces of course operations: tallies, charts, CSV, filters (no database)."""

from __future__ import annotations

from datetime import date

from courseops.charts import bar_chart, trend_chart
from courseops.gradebook_html import score_text
from courseops.misconceptions import Attempt, analytics_csv_rows, assignment_analytics
from courseops.roster_csv import roster_parse
from courseops.submission_lists import SubmissionFilter, part_matches


def _part(key: str, correct: bool, kind: str, paths: list[list[str]], answer: str = "1") -> dict[str, object]:
    return {"part": key, "correct": correct, "answer": answer, "diagnosis": {"kind": kind, "paths": paths}}


def test_unanswered_parts_are_not_attempts_and_unknown_names_no_path() -> None:
    attempts = [
        Attempt(1, "ann", 1, date(2026, 12, 1), [_part("x.grad", False, "unknown", [["x", "mul", "z"]]),
                                                  _part("y.grad", False, "unanswered", [], answer="")]),
        Attempt(2, "ann", 2, date(2026, 12, 2), [_part("x.grad", True, "correct", [])]),
    ]
    parts = assignment_analytics(attempts, part_order=["x.grad", "y.grad"])["parts"]
    assert (parts["x.grad"]["attempts"], parts["x.grad"]["wrong"], parts["x.grad"]["paths"]) == (2, 1, [])
    assert parts["x.grad"]["first"]["kinds"] == {"unknown": 1} and parts["x.grad"]["final"]["correct"] == 1
    assert [d["day"] for d in parts["x.grad"]["by_day"]] == ["2026-12-01", "2026-12-02"]
    assert parts["y.grad"]["attempts"] == 0 and parts["y.grad"]["students"] == 0
    rows = list(analytics_csv_rows({"parts": parts}))
    assert rows[0][:3] == ["part", "what", "name"] and rows[1][:4] == ["x.grad", "kind", "unknown", "1"]


def test_charts_escape_their_labels_and_carry_a_title() -> None:
    svg = bar_chart(title="x <b>", bars=[("<script>alert(1)</script>", 3, 0.5)])
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "<title>x &lt;b&gt;</title>" in svg
    assert "3 (50 %)" in svg
    assert "No attempts yet." in trend_chart(title="t", days=[])
    assert trend_chart(title="t", days=[("2026-12-01", 4, 1)]).count("<rect") == 2


def test_score_text_reads_like_the_templates() -> None:
    assert [score_text(v) for v in (2.0, 0.5, 1 / 3, 0.0)] == ["2", "0.5", "0.33", "0"]


def test_a_roster_file_with_a_bom_and_blank_lines_reads() -> None:
    lines, errors = roster_parse("\ufeffUsername,Role\n\nann,TA\n".encode())
    assert errors == [] and [(line.line, line.username, line.role) for line in lines] == [(3, "ann", "ta")]


def test_the_path_filter_matches_named_paths_only() -> None:
    document = {"parts": [_part("x.grad", False, "missing_path", [["x", "mul", "add", "z"]]),
                          _part("y.grad", False, "unknown", [["y", "mul", "add", "z"]])]}
    assert part_matches(document, SubmissionFilter(path="x→mul→add→z"))
    assert not part_matches(document, SubmissionFilter(path="y→mul→add→z"))
    assert not part_matches(document, SubmissionFilter(part="y.grad", kind="missing_path"))
    assert part_matches(document, SubmissionFilter.from_query({"part": "x.grad", "correct": "false"}))


def test_wrong_local_derivatives_are_counted_per_edge_also_inside_two_mistakes() -> None:
    """Two students forget d(x·x)/dx counts x twice (edge x → mul); one of them also drops a path."""
    slip = {"kind": "wrong_local_derivative", "paths": [["x", "mul", "add", "z"]], "edge": ["x", "mul"]}
    both = {"kind": "two_mistakes", "paths": [], "mistakes": [dict(slip), {"kind": "missing_path", "paths": []}]}
    attempts = [
        Attempt(1, "ann", 1, date(2026, 12, 1),
                [{"part": "x.grad", "correct": False, "answer": "4", "diagnosis": slip}]),
        Attempt(2, "bob", 1, date(2026, 12, 1),
                [{"part": "x.grad", "correct": False, "answer": "3", "diagnosis": both}]),
    ]
    part = assignment_analytics(attempts, part_order=["x.grad"])["parts"]["x.grad"]
    assert part["edges"] == [{"edge": ["x", "mul"], "count": 2, "share": 1.0}]
    rows = list(analytics_csv_rows({"parts": {"x.grad": part}}))
    assert ["x.grad", "edge", "x → mul", "2"] in [row[:4] for row in rows]


def test_a_filter_written_in_capitals_is_read_not_refused() -> None:
    """?correct=TRUE (as a spreadsheet or a hand-typed URL writes it): the list reads it, so no 400 either."""
    for query in ({"correct": "TRUE"}, {"correct": "False"}, {"infra": "1"}, {"infra": "True"}):
        assert SubmissionFilter.query_problem(query) is None
    assert SubmissionFilter.from_query({"correct": "TRUE"}).correct is True
    assert SubmissionFilter.from_query({"infra": "True"}).infra is True
    assert SubmissionFilter.query_problem({"correct": "yes"}) == "correct must be one of true, 1, false, 0"
