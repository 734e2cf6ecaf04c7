"""A regrade through the real queue: a Celery worker previews it and applies it, once."""

from __future__ import annotations

from typing import Any

import pytest

from assignments.services import membership_set
from courseops.models import ResultRevision
from grader.models import Result
from tests.clients import api
from tests.courseops_known import known_course_build


@pytest.mark.integration
def test_the_worker_previews_and_applies_a_regrade_exactly_once(live_db: None, worker: Any, make_user: Any) -> None:
    known = known_course_build()
    teacher = make_user("instructor")
    membership_set(user=teacher.user, course=known.course, role="instructor")
    known.a.parts.filter(key="x.grad").update(rel_tol=1e-3)  # erin's 7.001 is now within tolerance
    url = f"/api/v1/assignments/{known.a.slug}/regrade/"
    preview = api(teacher).post(url, {"dry_run": True, "wait": 20}, format="json")
    assert preview.status_code == 200, preview.json()
    erin = known.submissions[("erin", "a", 1)].id
    assert [(c["submission"], c["old"], c["new"]) for c in preview.json()["changes"] if c["score_changed"]] == [
        (erin, 0.0, 1.0)]
    before = dict(Result.objects.filter(submission__assignment=known.a).values_list("submission_id", "score"))

    applied = api(teacher).post(url, {"dry_run": False, "regrade": preview.json()["id"], "wait": 20}, format="json")
    assert applied.status_code == 200 and applied.json()["status"] == "applied", applied.json()
    after = dict(Result.objects.filter(submission__assignment=known.a).values_list("submission_id", "score"))
    assert {k for k in after if after[k] != before[k]} == {erin} and after[erin] == 1.0
    assert ResultRevision.objects.filter(regrade_id=preview.json()["id"]).count() == len(preview.json()["changes"])
    again = api(teacher).post(url, {"dry_run": False, "regrade": preview.json()["id"]}, format="json")
    assert again.status_code == 400  # applied already: applying twice changes nothing
