"""Preview, publish and import run out of the web request: the page gets a job that polls, a worker on
the maintenance lane runs the reference, and only what passes vetting is published."""

from __future__ import annotations

import io
import re
import time
import uuid
import zipfile
from datetime import timedelta
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from assignments.models import Assignment, AssignmentVersion, AuthoringJob
from authoring.jobs import job_run
from tests.authoring_forms import GOOD_REFERENCE, WALKTHROUGH_REFERENCE, form_post, job_id_in
from tests.clients import logged_in


class RefusingRunner:
    """Set as the web process's reference runner: any reference run inside a request is recorded
    (in case a caller swallows the error) and fails."""

    calls: list[str] = []

    def analyze(self, **_: Any) -> Any:
        self.calls.append("reference")
        raise AssertionError("the web request ran a reference program")

    analyze_points = analyze


def _poll(client: Any, job_id: int, timeout: float = 90) -> str:
    """As the page does: fetch the fragment until it stops polling."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        html = client.get(f"/staff/jobs/{job_id}/", headers={"HX-Request": "true"}).content.decode()
        if "hx-get" not in html:
            return html
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} still pending after {timeout} s")


def _publish(client: Any, slug: str, post: dict[str, str]) -> str:
    """Press the publish button as a browser would: a redirect to the job's page, polled until done."""
    response = client.post(f"/staff/assignments/{slug}/publish/", post)
    assert response.status_code == 302 and response["Location"].startswith("/staff/jobs/"), response
    page = client.get(response["Location"]).content.decode()
    assert "Vet and publish" in page and 'class="authoring-job"' in page
    return _poll(client, int(response["Location"].rstrip("/").rsplit("/", 1)[1]))


@pytest.mark.integration
def test_create_preview_and_publish_run_the_reference_only_in_the_worker(
        live_db: None, worker: Any, instructor: Any, make_user: Any, settings: Any, monkeypatch: Any) -> None:
    sandbox_calls: list[str] = []

    def no_sandbox(**_: Any) -> Any:
        sandbox_calls.append("job")
        raise AssertionError("the web request ran a sandbox job")

    # The web process (this one) may neither run a reference nor send anything to the sandbox; the
    # worker (another process, with the real runner and sandbox) does both.
    settings.GRADER_REFERENCE_RUNNER = "tests.test_authoring_jobs.RefusingRunner"
    monkeypatch.setattr(RefusingRunner, "calls", [])
    monkeypatch.setattr("sandbox.client.run_job", no_sandbox)
    client = logged_in(instructor)
    slug = f"job-{uuid.uuid4().hex[:6]}"
    walk = {"reference": WALKTHROUGH_REFERENCE, "params": "x0 = 3.0\ny0 = 2.5"}
    assert client.post("/staff/courses/autograd-101/assignments/new/", form_post(slug=slug, **walk)).status_code == 302

    posted = client.post(f"/staff/assignments/{slug}/preview/", {**form_post(slug=slug, **walk), "trial:x.grad": "2.5"})
    html = posted.content.decode()
    assert posted.status_code == 200 and 'data-job-status="queued"' in html and "hx-get" in html
    job_id = job_id_in(html)
    page = _poll(client, job_id)
    assert 'data-job-status="done"' in page
    assert "8.5" in page and "<svg" in page and "Feedback space" in page
    assert "Score: <strong>0 / 2</strong>" in page  # the trial answer, graded as a student's would be
    assert AuthoringJob.objects.get(pk=job_id).status == AuthoringJob.Status.DONE

    other = make_user("instructor")  # same course, but not the one who asked
    assert logged_in(other).get(f"/staff/jobs/{job_id}/").status_code == 404
    assert logged_in(make_user("student")).get(f"/staff/jobs/{job_id}/").status_code == 404

    assert "Vet and publish version 1" in client.get(f"/staff/assignments/{slug}/publish/").content.decode()
    # At (3, 2.5) the walkthrough's 2.5 is both "missed x → pow → add → z" and y's forward value.
    code = "ambiguous-mistakes:parts.x.grad"
    refused = _publish(client, slug, {})
    assert 'data-job-status="done"' in refused and "Not published." in refused
    assert "the answer 2.5 is both missing path x → pow → add → z" in refused and f'name="justify:{code}"' in refused
    assert not Assignment.objects.get(slug=slug).published
    why = "the lesson is about telling these two apart"
    published = _publish(client, slug, {f"justify:{code}": why})
    assert "Published version 1." in published, published[:2000]
    version = AssignmentVersion.objects.get(assignment__slug=slug)
    assert version.overrides == [{"code": code, "field": "parts.x.grad", "justification": why,
                                  "problem": version.overrides[0]["problem"]}]
    assert "2.5 is both" in version.overrides[0]["problem"] and Assignment.objects.get(slug=slug).published
    assert RefusingRunner.calls == [] and sandbox_calls == []


@pytest.mark.django_db
def test_a_job_nobody_ran_stops_polling_after_its_bounded_wait(instructor: Any) -> None:
    client = logged_in(instructor)
    slug = f"stale-{uuid.uuid4().hex[:6]}"
    assert client.post("/staff/courses/autograd-101/assignments/new/", form_post(slug=slug)).status_code == 302
    job_id = job_id_in(client.post(f"/staff/assignments/{slug}/preview/", form_post(slug=slug)).content.decode())
    AuthoringJob.objects.filter(pk=job_id).update(created_at=timezone.now() - timedelta(minutes=2))
    html = client.get(f"/staff/jobs/{job_id}/", headers={"HX-Request": "true"}).content.decode()
    assert "hx-get" not in html and "did not finish within 60 s" in html


@pytest.mark.django_db
def test_form_errors_come_back_at_once_without_a_job(instructor: Any) -> None:
    client = logged_in(instructor)
    slug = f"errs-{uuid.uuid4().hex[:6]}"
    assert client.post("/staff/courses/autograd-101/assignments/new/", form_post(slug=slug)).status_code == 302
    response = client.post(f"/staff/assignments/{slug}/preview/", form_post(slug=slug, params="x0 = [unclosed"))
    assert response.status_code == 400 and "params: is not valid TOML" in response.content.decode()
    assert not AuthoringJob.objects.filter(assignment__slug=slug).exists()


def _toml(slug: str, params: str, reference: str = GOOD_REFERENCE) -> str:
    return (f'slug = "{slug}"\ntitle = "T {slug}"\nstatement = "s"\nreference = """\n{reference}"""\n'
            f'[params]\n{params}\n[[parts]]\nkey = "x.grad"\n[[parts]]\nkey = "y.grad"\n')


def _text(page: str) -> str:
    """The page as read: tags gone, so a badge and the words after it read as one line."""
    return re.sub(r"<[^>]+>", "", page)


def _zip(files: dict[str, bytes]) -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, blob in files.items():
            archive.writestr(name, blob)
    return SimpleUploadedFile("course.zip", buffer.getvalue(), content_type="application/zip")


@pytest.mark.django_db
def test_an_import_publishes_only_what_passes_vetting(instructor: Any, make_user: Any) -> None:
    from assignments.models import Course

    tag = uuid.uuid4().hex[:6]
    good, weak, broken, foreign = (f"{name}-{tag}" for name in ("good", "weak", "broken", "foreign"))
    Assignment.objects.create(course=Course.objects.create(slug=f"c-{tag}", title="C"), slug=foreign, title="F",
                              statement="s", reference_program="x = 1")
    files = {
        f"{good}.toml": _toml(good, "x0 = 1.5\ny0 = -0.5").encode(),
        # dz/dx = 6x = 0 at x0 = 0: the answer 0 passes, so it must not reach students.
        f"{weak}.toml": _toml(weak, "x0 = 0.0\ny0 = -0.5").encode(),
        f"{broken}.toml": _toml(broken, "x0 = 1.5\ny0 = -0.5", reference="z = q\n").encode(),
        f"{foreign}.toml": _toml(foreign, "x0 = 1.5\ny0 = -0.5").encode(),
        "latin1.toml": 'title = "caf\xe9"'.encode("latin-1"),
        "course.toml": b'[course]\nslug = "x"\ntitle = "x"\n',
    }
    client = logged_in(instructor)
    response = client.post("/staff/courses/autograd-101/import/", {"catalog": _zip(files)})
    assert response.status_code == 302 and response["Location"].startswith("/staff/jobs/")
    job_id = int(response["Location"].rstrip("/").rsplit("/", 1)[1])
    assert "Vetting the files" in client.get(response["Location"]).content.decode()  # the page polls meanwhile
    job_run(job_id=job_id)  # the maintenance worker's part, in this test's transaction
    page = _text(client.get(response["Location"]).content.decode())

    assert f"published {good} ({good}.toml) as v1" in page and "published published" not in page
    assert Assignment.objects.get(slug=good).published and AssignmentVersion.objects.get(assignment__slug=good)
    assert f"kept as a draft {weak}" in page and f"{weak}.toml: parts.x.grad: the answer 0 passes" in page
    assert not Assignment.objects.get(slug=weak).published
    assert f"{broken}.toml: reference:" in page and "NameError" in page
    assert not Assignment.objects.filter(slug=broken).exists()
    copy = f"{foreign}-autograd-101"  # another course's slug: loaded as this course's copy, the other untouched
    assert f"published {copy} ({foreign}.toml) as v1" in page
    assert f"&#x27;{foreign}&#x27; belongs to another course: loaded as this course&#x27;s &#x27;{copy}&#x27;" in page
    assert Assignment.objects.get(slug=foreign).title == "F"
    assert Assignment.objects.get(slug=copy).course.slug == "autograd-101"
    assert "latin1.toml: file: is not UTF-8 text" in page
    assert logged_in(make_user("student")).get(f"/assignments/{weak}/").status_code == 404


@pytest.mark.django_db
def test_a_failing_update_of_a_published_assignment_waits_as_its_unpublished_edits(instructor: Any) -> None:
    slug = f"live-{uuid.uuid4().hex[:6]}"
    client = logged_in(instructor)

    def upload(params: str) -> str:
        blob = SimpleUploadedFile(f"{slug}.toml", _toml(slug, params).encode())
        location = client.post("/staff/courses/autograd-101/import/", {"catalog": blob})["Location"]
        job_run(job_id=int(location.rstrip("/").rsplit("/", 1)[1]))
        return _text(client.get(location).content.decode())

    assert "as v1" in upload("x0 = 1.5\ny0 = -0.5")
    page = upload("x0 = 0.0\ny0 = -0.5")
    assert f"kept as unpublished edits {slug}" in page and "the answer 0 passes" in page
    live = Assignment.objects.get(slug=slug)
    assert live.published and live.version == 1 and live.params == {"x0": 1.5, "y0": -0.5}
    assert live.draft is not None and live.draft["params"] == {"x0": 0.0, "y0": -0.5}
    assert "as v2" in upload("x0 = 1.5\ny0 = -0.5")  # the passing file wins over the pending edits
    live.refresh_from_db()
    assert live.version == 2 and live.draft is None
    unchanged = upload("x0 = 1.5\ny0 = -0.5")
    assert f"unchanged {slug}" in unchanged and "unchanged unchanged" not in unchanged  # the state said once
