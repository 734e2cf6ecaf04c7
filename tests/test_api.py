"""The JSON API of SPEC §6, against the real Celery worker where grading happens."""

from __future__ import annotations

import time
from typing import Any

import pytest
from rest_framework.test import APIClient

from assignments.models import Assignment, Course
from grader.models import Submission
from grader.workflow import attempts_used
from tests.clients import api, keys_anywhere
from tests.seed_answers import NUMERIC, answers_for, code_for

SEED_ANSWERS = NUMERIC



def wait_graded(client: APIClient, submission_id: int, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body: dict[str, Any] = client.get(f"/api/v1/submissions/{submission_id}/").json()
        if body["status"] in ("graded", "error"):
            return body
        time.sleep(0.05)
    raise AssertionError(f"submission {submission_id} not graded within {timeout}s: {body}")


def submit(client: APIClient, slug: str, answers: dict[str, Any], code: dict[str, str] | None = None) -> Any:
    body: dict[str, Any] = {"answers": answers, **({"code": code} if code else {})}
    return client.post(f"/api/v1/assignments/{slug}/submissions/", body, format="json")



@pytest.mark.integration
@pytest.mark.parametrize("slug", sorted(SEED_ANSWERS))
def test_it_grades_each_seed_assignment_with_full_marks(live_db: None, worker: Any, student: Any, slug: str) -> None:
    client = api(student)
    response = submit(client, slug, answers_for(slug), code_for(slug))
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "queued"
    assert response["Location"].endswith(f"/api/v1/submissions/{response.json()['id']}/")
    body = wait_graded(client, response.json()["id"])
    assert body["status"] == "graded", body
    assert body["error"] is None and body["attempt"] == 1
    result = body["result"]
    assert result["assignment"] == slug
    assert result["score"] == result["max_score"] > 0
    assert all(part["correct"] for part in result["parts"]), result
    assert "expected" not in keys_anywhere(result)


@pytest.mark.integration
def test_a_wrong_answer_gets_a_diagnosis_and_a_graph_url_but_no_expected_value(
    live_db: None, worker: Any, student: Any, instructor: Any
) -> None:
    client = api(student)
    submission_id = submit(client, "visual-walkthrough", {"x.grad": "4", "y.grad": "2"}).json()["id"]
    body = wait_graded(client, submission_id)
    parts = {part["part"]: part for part in body["result"]["parts"]}
    assert parts["x.grad"]["correct"] is False and parts["x.grad"]["answer"] == "4"
    assert parts["x.grad"]["diagnosis"]["kind"] == "missing_path"
    assert ["x", "mul", "add", "z"] in parts["x.grad"]["diagnosis"]["paths"]
    assert parts["x.grad"]["graph_svg_url"].endswith(f"/submissions/{submission_id}/graph.svg?part=x.grad")
    assert parts["y.grad"]["correct"] is True and "graph_svg_url" not in parts["y.grad"]
    assert body["result"]["score"] == 1.0 and body["result"]["max_score"] == 5.0  # numbers, formula, code
    assert "expected" not in keys_anywhere(body)

    graph = client.get(parts["x.grad"]["graph_svg_url"])
    assert graph.status_code == 200 and graph["Content-Type"].startswith("image/svg+xml")
    assert b"<svg" in graph.content

    as_instructor = api(instructor).get(f"/api/v1/submissions/{submission_id}/").json()
    assert {part["part"]: part.get("expected") for part in as_instructor["result"]["parts"]}["x.grad"] == 7.0


@pytest.mark.django_db
def test_it_lists_my_assignments_with_attempts_and_best_score(student: Any) -> None:
    response = api(student).get("/api/v1/assignments/")
    assert response.status_code == 200
    rows = {row["slug"]: row for row in response.json()}
    assert set(SEED_ANSWERS) <= set(rows)
    walkthrough = rows["visual-walkthrough"]
    assert walkthrough["attempts_used"] == 0 and walkthrough["best_score"] is None
    assert walkthrough["max_score"] == 5.0 and walkthrough["url"].endswith("/api/v1/assignments/visual-walkthrough/")
    assert {"due_at", "attempts_left", "course", "title"} <= set(walkthrough)


@pytest.mark.django_db
def test_assignment_detail_has_parts_but_no_reference_params_or_expected(student: Any) -> None:
    response = api(student).get("/api/v1/assignments/linear-layer/")
    assert response.status_code == 200
    body = response.json()
    assert [part["key"] for part in body["parts"]] == ["w.grad", "b.grad", "backward"]
    assert set(body["parts"][0]) == {"key", "kind", "points", "prompt", "hint", "options", "multiple"}
    assert "$" in body["statement"]
    forbidden = {"expected", "reference_program", "reference", "params", "variant_ranges"}
    assert not forbidden & keys_anywhere(body)
    assert "requires_grad=True" not in response.content.decode()


@pytest.mark.django_db
def test_unreadable_answers_are_400_per_part_and_use_no_attempt(student: Any) -> None:
    client = api(student)
    response = submit(client, "visual-walkthrough", {"x.grad": "seven", "y.grad": "[1, 2"})
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert set(errors) == {"x.grad", "y.grad"} and all(isinstance(m, str) and m for m in errors.values())
    assignment = Assignment.objects.get(slug="visual-walkthrough")
    assert attempts_used(student=student.user, assignment=assignment) == 0
    assert not Submission.objects.filter(student=student.user).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("body", [
    {"answers": {"x.grad": 7}},
    {"answers": {"x.grad": None}},
    {"answers": {"x.grad": ["7"]}},
    {"answers": {"nope.grad": "7"}},
    {"answers": {}},
    {},
    {"code": {"grad_z": 5}},  # was stored as the source "5" and graded as broken code
    {"answers": {"x.grad": "7"}, "wait": True},  # was read as a 1 s wait
    {"answers": {"x.grad": "7"}, "wait": "5"},  # was read as 5 s: JSON writes a number bare
])
def test_wrong_shapes_of_answers_are_400_with_a_message(student: Any, body: dict[str, Any]) -> None:
    response = api(student).post("/api/v1/assignments/visual-walkthrough/submissions/", body, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] and all(isinstance(m, str) for m in response.json()["errors"].values())
    assert not Submission.objects.filter(student=student.user).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", '"x.grad=7"', '{"answers": "7"}', '{"answers": [1]}',
                                 '{"answers": {"x.grad": "7"}, "code": "print(1)"}', "null"])
def test_malformed_bodies_are_400_not_500(student: Any, raw: str) -> None:
    response = api(student).post("/api/v1/assignments/visual-walkthrough/submissions/", raw,
                                 content_type="application/json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body.get("errors") or body.get("detail")
    assert not Submission.objects.filter(student=student.user).exists()


@pytest.mark.django_db
def test_a_form_encoded_body_is_refused_with_415(student: Any) -> None:
    response = api(student).post("/api/v1/assignments/visual-walkthrough/submissions/", {"answers": "x"})
    assert response.status_code == 415


@pytest.mark.django_db
def test_a_policy_refusal_is_403_with_a_message(student: Any) -> None:
    Assignment.objects.filter(slug="detach").update(max_attempts=1)
    client = api(student)
    assert submit(client, "detach", {"x.grad": "12"}).status_code == 202
    response = submit(client, "detach", {"x.grad": "4"})
    assert response.status_code == 403
    assert "your only attempt" in response.json()["detail"]
    detail = client.get("/api/v1/assignments/detach/").json()
    assert detail["attempts_left"] == 0 and detail["attempts_used"] == 1


@pytest.mark.django_db
def test_a_closed_assignment_is_403(student: Any) -> None:
    Assignment.objects.filter(slug="dead-relu").update(closes_at="2000-01-01T00:00:00Z")
    response = submit(api(student), "dead-relu", {"x.grad": "0"})
    assert response.status_code == 403 and "closed" in response.json()["detail"]


@pytest.mark.django_db
def test_unknown_or_foreign_assignments_are_404(student: Any) -> None:
    other = Course.objects.create(slug="elsewhere", title="Another course")
    Assignment.objects.create(course=other, slug="foreign", title="F", statement="s", reference_program="x = 1")
    Assignment.objects.filter(slug="accumulation").update(published=False)
    client = api(student)
    for slug in ("no-such-thing", "foreign", "accumulation"):
        assert client.get(f"/api/v1/assignments/{slug}/").status_code == 404
        assert submit(client, slug, {"x.grad": "1"}).status_code == 404
    slugs = {row["slug"] for row in client.get("/api/v1/assignments/").json()}
    assert "foreign" not in slugs and "accumulation" not in slugs
    assert client.get("/api/v1/submissions/999999999/").status_code == 404


@pytest.mark.django_db
def test_my_submission_list_shows_only_mine(student: Any, other_student: Any) -> None:
    submit(api(other_student), "detach", {"x.grad": "4"})
    mine = submit(api(student), "detach", {"x.grad": "12"}).json()["id"]
    listed = api(student).get("/api/v1/assignments/detach/submissions/").json()
    assert [row["id"] for row in listed] == [mine]
    assert listed[0]["status"] == "queued" and listed[0]["result"] is None


@pytest.mark.django_db
def test_the_openapi_schema_describes_the_endpoints(client: Any) -> None:
    response = client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    for path in ("/api/v1/assignments/", "/api/v1/assignments/{slug}/", "/api/v1/assignments/{slug}/submissions/",
                 "/api/v1/submissions/{id}/"):
        assert path in paths, sorted(paths)
    assert "202" in paths["/api/v1/assignments/{slug}/submissions/"]["post"]["responses"]
    assert "TokenAuth" in response.content.decode() or "tokenAuth" in response.content.decode()


@pytest.mark.integration
def test_concurrent_submissions_over_http_are_all_accepted_and_graded(
    live_db: None, worker: Any, web_server: str, make_user: Any
) -> None:
    """Students submitting at the same moment must never see a 500 (on SQLite: 'database is locked')."""
    import json
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    people = [make_user("student") for _ in range(4)]

    def submit_over_http(n: int) -> int:
        request = urllib.request.Request(
            f"{web_server}/api/v1/assignments/visual-walkthrough/submissions/",
            data=json.dumps({"answers": {"x.grad": str(n % 9), "y.grad": "2"}}).encode(), method="POST",
            headers={"Authorization": f"Token {people[n % 4].token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return int(json.loads(response.read())["id"]) if response.status == 202 else -response.status
        except urllib.error.HTTPError as exc:
            return -exc.code

    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = list(pool.map(submit_over_http, range(40)))
    assert all(submission_id > 0 for submission_id in ids), ids
    assert _eventually(lambda: Submission.objects.filter(id__in=ids, status="graded").count() == len(ids))
    for person in people:  # attempt numbers per student never collide
        attempts = Submission.objects.filter(student=person.user, id__in=ids).values_list("attempt", flat=True)
        assert sorted(attempts) == list(range(1, 11))


def _eventually(check: Any, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False
