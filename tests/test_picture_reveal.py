"""The picture's gradients follow the result document's reveal policy: a student never gets,
through the picture, an expected answer the result document hides from them."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from grader.models import Submission
from tests.clients import logged_in
from tests.test_web import post_answers, wait_status

SVG = "{http://www.w3.org/2000/svg}"


def texts(svg: bytes) -> list[str]:
    return ["".join(element.itertext()).strip() for element in ET.fromstring(svg).iter(f"{SVG}text")]


@pytest.mark.integration
def test_a_wrong_x_grad_hides_7_from_the_student_but_not_from_the_instructor(
    live_db: None, worker: Any, student: Any, instructor: Any
) -> None:
    client = logged_in(student)
    post_answers(client, "visual-walkthrough", {"x.grad": "4", "y.grad": "2"}, HX_Request="true")
    submission = Submission.objects.get(student=student.user)
    html = wait_status(client, submission.id)
    assert 'class="graph-details"' in html  # the right y.grad shows how autograd got it

    for part in ("x.grad", "y.grad"):
        shown = texts(client.get(f"/submissions/{submission.id}/graph.svg?part={part}").content)
        assert "y.grad = 2" in shown  # right, so the student knows it
        assert not [text for text in shown if text.startswith("x.grad") or "7" in text], (part, shown)
    everything = texts(client.get(f"/submissions/{submission.id}/graph.svg").content)
    assert not [text for text in everything if text.startswith("x.grad")]

    teacher = texts(logged_in(instructor).get(f"/submissions/{submission.id}/graph.svg?part=x.grad").content)
    assert [text for text in teacher if re.fullmatch(r"x\.grad = (3 \+ 4) = 7", text)], teacher


@pytest.mark.integration
def test_once_x_grad_is_right_the_student_sees_its_flow_and_the_merge(
    live_db: None, worker: Any, student: Any
) -> None:
    client = logged_in(student)
    post_answers(client, "visual-walkthrough", {"x.grad": "7"}, HX_Request="true")
    submission = Submission.objects.get(student=student.user)
    wait_status(client, submission.id)
    shown = texts(client.get(f"/submissions/{submission.id}/graph.svg?part=x.grad").content)
    assert "How autograd got x.grad" in shown
    assert [text for text in shown if re.fullmatch(r"x\.grad = (3 \+ 4) = 7", text)], shown
    assert not [text for text in shown if text.startswith("y.grad")]  # unanswered: still the student's to find


def test_the_wrong_edge_says_what_the_student_used_once_the_engine_names_it() -> None:
    from chainrule import Disclosure, Highlight
    from grader.pictures import _edge_notes

    edge, everything, partial = ("leaf:x", "op4"), Disclosure(everything=True), Disclosure()
    diagnosis = {"kind": "wrong_local_derivative", "edge": ["x", "pow"], "used": "x", "right": "2·x"}
    assert _edge_notes({"diagnosis": diagnosis}, Highlight(wrong_edges=[edge]), everything) == {
        edge: "✗ you used x; right: 2·x"}
    assert _edge_notes({"diagnosis": diagnosis}, Highlight(wrong_edges=[edge]), partial) == {
        edge: "✗ you used x here"}  # the right factor would give the part away before the whole picture
    assert _edge_notes({"diagnosis": {"kind": "wrong_local_derivative"}}, Highlight(wrong_edges=[edge]),
                       everything) == {edge: "✗ wrong local derivative"}  # the picture adds the right slope
    assert _edge_notes({"diagnosis": {"kind": "sign_error"}}, Highlight(wrong_edges=[edge]), everything) == {}


def test_a_students_clone_is_named_on_the_cut_edge_it_let_gradient_through() -> None:
    from chainrule import Disclosure, Highlight
    from grader.pictures import _edge_notes

    edge = ("op2", "op3")
    notes = _edge_notes({"diagnosis": {"kind": "extra_path", "cut_as": "clone"}}, Highlight(wrong_edges=[edge]),
                        Disclosure())
    assert notes == {edge: "✗ clone() keeps the graph: gradient flows back here (detach() would stop it)"}
