"""The authoring API: an instructor lists, creates, updates and publishes assignments as catalog TOML;
vetting runs in a worker; students get 403 and another course's instructors 404."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from assignments.models import Assignment, Course, Membership
from assignments.services import membership_set
from tests.clients import api

XY = "x = torch.tensor(x0, requires_grad=True)\ny = torch.tensor(y0, requires_grad=True)\n"


def _toml(slug: str, *, x0: float = 1.5, title: str = "API-made") -> str:
    return (f'slug = "{slug}"\ntitle = "{title}"\nstatement = "Find x.grad."\n'
            f'reference = """\n{XY}z = 3 * x**2 + 2 * y\nz.backward()\n"""\n'
            f'[params]\nx0 = {x0}\ny0 = -0.5\n[[parts]]\nkey = "x.grad"\n')


@pytest.mark.integration
def test_an_instructor_creates_updates_and_publishes_through_the_api(live_db: None, worker: Any, instructor: Any,
                                                                     student: Any) -> None:
    client, slug = api(instructor), f"api-{uuid.uuid4().hex[:6]}"
    created = client.post("/api/v1/staff/courses/autograd-101/assignments/", {"toml": _toml(slug)}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["published"] is False and 'slug = "' + slug + '"' in created.json()["toml"]
    listed = client.get("/api/v1/staff/courses/autograd-101/assignments/").json()
    assert any(row["slug"] == slug and not row["published"] for row in listed)
    assert api(student).get(f"/api/v1/assignments/{slug}/").status_code == 404  # a draft

    updated = client.put(f"/api/v1/staff/assignments/{slug}/", {"toml": _toml(slug, title="Renamed")}, format="json")
    assert updated.status_code == 200 and updated.json()["title"] == "Renamed"
    published = client.post(f"/api/v1/staff/assignments/{slug}/publish/", {"wait": 20}, format="json")
    assert published.status_code == 200, published.content
    assert published.json()["result"] == {"version": 1, "warnings": []}  # no tolerance to warn about
    assert api(student).get(f"/api/v1/assignments/{slug}/").json()["title"] == "Renamed"

    # Edits of a live assignment wait as its draft; x0 = 0 makes the answer 0 pass, so vetting refuses.
    assert client.put(f"/api/v1/staff/assignments/{slug}/", {"toml": _toml(slug, x0=0.0)},
                      format="json").json()["has_draft"] is True
    refused = client.post(f"/api/v1/staff/assignments/{slug}/publish/", {"wait": 20}, format="json").json()
    assert [r["code"] for r in refused["result"]["refused"]] == ["trivial-answer:parts.x.grad"]
    assert Assignment.objects.get(slug=slug).params["x0"] == 1.5  # students keep version 1
    job = client.get(f"/api/v1/staff/jobs/{refused['id']}/")
    assert job.status_code == 200 and job.json()["status"] == "done"
    assert api(student).get(f"/api/v1/staff/jobs/{refused['id']}/").status_code == 404
    accepted = client.post(f"/api/v1/staff/assignments/{slug}/publish/", format="json", data={
        "wait": 20, "justifications": {"trivial-answer:parts.x.grad": "a warm-up at the origin"}})
    assert accepted.json()["result"] == {"version": 2, "warnings": []}


@pytest.mark.django_db
def test_the_authoring_api_is_course_scoped(instructor: Any, student: Any, make_user: Any) -> None:
    slug = f"scoped-{uuid.uuid4().hex[:6]}"
    assert api(instructor).post("/api/v1/staff/courses/autograd-101/assignments/", {"toml": _toml(slug)},
                                format="json").status_code == 201
    other_course = Course.objects.create(slug=f"b-{uuid.uuid4().hex[:6]}", title="B")
    elsewhere = make_user("student")
    Membership.objects.filter(user=elsewhere.user).delete()
    membership_set(user=elsewhere.user, course=other_course, role=Membership.Role.INSTRUCTOR)
    ta = make_user("ta")
    calls = [("get", "/api/v1/staff/courses/autograd-101/assignments/", None),
             ("post", "/api/v1/staff/courses/autograd-101/assignments/", {"toml": _toml(f"{slug}-x")}),
             ("get", f"/api/v1/staff/assignments/{slug}/", None),
             ("put", f"/api/v1/staff/assignments/{slug}/", {"toml": _toml(slug, title="hacked")}),
             ("post", f"/api/v1/staff/assignments/{slug}/publish/", {})]
    for person, code in ((student, 403), (ta, 403), (elsewhere, 404)):
        for method, url, body in calls:
            response = getattr(api(person), method)(url, body, format="json")
            assert response.status_code == code, (person.user.username, method, url, response.status_code)
    assert Assignment.objects.get(slug=slug).title == "API-made"
    assert not Assignment.objects.filter(slug=f"{slug}-x").exists()


@pytest.mark.django_db
def test_bad_toml_is_a_400_naming_the_field_and_writes_nothing(instructor: Any) -> None:
    client, slug = api(instructor), f"bad-{uuid.uuid4().hex[:6]}"
    unreadable = client.post("/api/v1/staff/courses/autograd-101/assignments/", {"toml": 'slug = "'}, format="json")
    assert unreadable.status_code == 400 and "is not valid TOML" in unreadable.json()["errors"]["file"]
    missing = client.post("/api/v1/staff/courses/autograd-101/assignments/", {}, format="json")
    assert missing.status_code == 400 and "toml" in missing.json()["errors"]
    assert client.post("/api/v1/staff/courses/autograd-101/assignments/", {"toml": _toml(slug)},
                       format="json").status_code == 201
    moved = client.put(f"/api/v1/staff/assignments/{slug}/", {"toml": _toml(f"{slug}-new")}, format="json")
    assert moved.status_code == 400 and "cannot change" in moved.json()["errors"]["slug"]
    schema = client.get("/api/v1/schema/").content.decode()
    for path in ("/api/v1/staff/courses/{course}/assignments/", "/api/v1/staff/assignments/{slug}/publish/",
                 "/api/v1/staff/jobs/{id}/"):
        assert path in schema
