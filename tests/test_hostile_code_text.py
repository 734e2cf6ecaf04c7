"""Text a student's code puts into its own feedback (an exception message, printed output) must be
text every page, the API and PostgreSQL can hold: a lone surrogate made the
submission's page, status fragment, API answer and staff page 500s; on PostgreSQL the worker could
not save the result at all, so the row stayed running and the student's next code submissions waited."""

from __future__ import annotations

from typing import Any

from assignments.models import Assignment
from chainrule.answers.code_report import validated_output
from grader.models import Submission
from grader.workflow import submission_create
from tests.clients import api, logged_in
from tests.drills import wait_graded

HOSTILE = {
    "a lone surrogate": "x = torch.tensor([x0], requires_grad=True)\nraise Exception('bad \\ud800 text')\n",
    "a NUL": "x = torch.tensor([x0], requires_grad=True)\nraise Exception('bad ' + chr(0) + ' text')\n",
}
RIGHT = "x = torch.tensor([x0], requires_grad=True)\ny = x**2\ny.backward(retain_graph=True)\ny.backward()\n"


def test_harness_text_is_made_storable_before_anything_reads_it() -> None:
    output = validated_output({"ok": False, "error": "a\x00b\ud800c", "points": [], "stdout": "\udfff"},
                              point_count=1)
    assert output.error == "a\ufffdb?c"
    assert output.stdout == "?"
    for text in (output.error, output.stdout):
        text.encode("utf-8")  # a page, a JSON answer and jsonb can hold it


def test_an_exception_message_with_a_lone_surrogate_or_a_nul_is_graded_and_shown(
    live_db: None, worker: Any, student: Any, instructor: Any
) -> None:
    assignment = Assignment.objects.get(slug="accumulation")
    ids = [submission_create(student=student.user, assignment=assignment, answers={}, code={"program": source}).id
           for source in [*HOSTILE.values(), RIGHT]]
    graded = sorted(wait_graded(ids, timeout=90), key=lambda s: s.id)
    assert [s.status for s in graded] == [Submission.Status.GRADED] * 3  # the right one is not held behind them
    page, staff, token = logged_in(student), logged_in(instructor), api(student)
    for submission in graded[:2]:
        [part] = [p for p in submission.result.document["parts"] if p["part"] == "program"]
        assert part["diagnosis"]["kind"] == "code_error"
        assert "bad" in part["diagnosis"]["message"] and "text" in part["diagnosis"]["message"]
        for client, url in [(page, f"/submissions/{submission.id}/"), (page, f"/submissions/{submission.id}/status/"),
                            (token, f"/api/v1/submissions/{submission.id}/"),
                            (staff, f"/staff/submissions/{submission.id}/")]:
            assert client.get(url).status_code == 200, url
    assert graded[2].result.score == 1.0
