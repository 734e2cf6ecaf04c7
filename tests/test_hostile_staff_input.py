"""Malformed input to the staff pages, the API and the login found by the attack pass:
each was a 500 (some only on PostgreSQL, as in production) or unbounded
work in the web process; each is now a 400 or a message, and nothing is written."""

from __future__ import annotations

import io
import struct
import tracemalloc
import zipfile
import zlib
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.test import Client, override_settings

from assignments.models import Assignment, Course, Extension
from assignments.services import membership_set
from authoring.jobs import job_run
from courseops.models import ScoreOverride
from tests.authoring_forms import form_post
from tests.clients import api, logged_in
from tests.courseops_known import KnownCourse, known_course_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def known(django_db_setup: None) -> KnownCourse:
    return known_course_build()


@pytest.fixture
def teacher(known: KnownCourse, make_user: Any) -> Any:
    person = make_user("instructor")
    membership_set(user=person.user, course=known.course, role="instructor")
    return person


def nul_requests(known: KnownCourse) -> list[tuple[str, str, dict[str, str]]]:
    """Every place a NUL reached a PostgreSQL filter or insert (DataError, a 500)."""
    course, slug = known.course.slug, known.a.slug
    bob, sub = known.users["bob"].username, known.submissions[("bob", "a", 1)].id
    return [
        ("get", f"/staff/courses/{course}/gradebook/", {"q": "a\x00"}),
        ("get", f"/staff/courses/{course}/gradebook/", {"section": "\x00", "format": "csv"}),
        ("get", f"/api/v1/courses/{course}/gradebook/", {"section": "\x00"}),
        ("get", f"/staff/courses/{course}/roster/", {"q": "\x00"}),
        ("get", f"/staff/assignments/{slug}/submissions/", {"student": "\x00"}),
        ("get", f"/api/v1/assignments/{slug}/submissions/", {"student": "\x00"}),
        ("get", f"/staff/courses/{course}/students/a%00/", {}),
        ("post", f"/staff/submissions/{sub}/override/", {"part": "x.grad", "score": "1", "comment": "c\x00"}),
        ("post", f"/staff/assignments/{slug}/extensions/", {"username": bob, "reason": "late\x00"}),
        ("post", f"/staff/assignments/{slug}/extensions/", {"username": "\x00"}),
        ("post", f"/staff/courses/{course}/staff/", {"username": "a\x00", "role": "ta"}),
        ("post", f"/staff/courses/{course}/roster/", {"csv": "username,name\nnew-one,a\x00b\n", "apply": "1"}),
        ("post", "/staff/courses/new/", {"slug": "nul-course", "title": "a\x00b"}),
    ]


@override_settings(GRADER_COURSE_CREATORS="instructors")  # the course form's input checks, not who may use it
def test_a_nul_character_in_a_query_path_or_form_is_a_400_and_writes_nothing(known: KnownCourse,
                                                                              teacher: Any) -> None:
    client = logged_in(teacher, raise_request_exception=False)
    token = api(teacher)
    for method, url, data in nul_requests(known):
        caller = token if url.startswith("/api/") else client
        response = getattr(caller, method)(url, data)
        assert response.status_code == 400, (method, url, response.status_code)
        assert b"NUL character" in response.content
    assert not ScoreOverride.objects.filter(submission__assignment=known.a).exists()
    assert not Extension.objects.filter(assignment=known.a).exists()
    assert not Course.objects.filter(slug="nul-course").exists()
    assert api(teacher).get(f"/api/v1/assignments/{known.a.slug}/submissions/",
                            {"student": "\x00"}).json()["detail"].startswith("The request contains a NUL")


def test_a_login_name_longer_than_any_account_is_cut_for_the_failure_record(client: Client) -> None:
    name = "n" * 10_000  # PostgreSQL refused the 10,000 characters in axes' varchar(255): a 500
    response = client.post("/accounts/login/", {"username": name, "password": "wrong"})
    assert response.status_code == 200
    assert [len(a.username) for a in AccessAttempt.objects.filter(username__startswith="nnnn")] == [150]


@pytest.mark.parametrize("query", [{"page": "²"}, {"page": "9" * 23}, {"page": "-1"}, {"stuck_after": "²"},
                                   {"stuck_after": "9" * 23}, {"page": "١"}])
def test_page_and_stuck_after_that_are_not_plain_digits_are_read_as_the_default_or_the_bound(
    known: KnownCourse, teacher: Any, query: dict[str, str]
) -> None:
    client, token, slug = logged_in(teacher), api(teacher), known.a.slug
    name = "analytics" if "stuck_after" in query else "submissions"
    assert client.get(f"/staff/assignments/{slug}/{name}/", query).status_code == 200
    assert token.get(f"/api/v1/assignments/{slug}/{name}/", query).status_code == 200


def test_the_bounded_numbers_keep_their_meaning() -> None:
    from courseops.query_numbers import query_int

    def read(raw: str) -> int:
        return query_int({"n": raw}, "n", default=3, low=1, high=100)

    assert [read(raw) for raw in ("7", " 7 ", "0", "500", "9" * 30, "²", "٣", "x", "")] == [7, 7, 1, 100, 100,
                                                                                            3, 3, 3, 3]


@pytest.mark.parametrize("form", [{"slug": "ａｂ", "title": "Full-width"}, {"slug": "a" * 51, "title": "Long slug"},
                                  {"slug": "long-title", "title": "t" * 201}, {"slug": "a_b", "title": "t"}])
@override_settings(GRADER_COURSE_CREATORS="instructors")
def test_a_course_slug_must_be_ascii_and_fit_its_column(teacher: Any, form: dict[str, str]) -> None:
    response = logged_in(teacher, raise_request_exception=False).post("/staff/courses/new/", form)
    assert response.status_code == 400
    assert b"at most 50 lowercase letters" in response.content
    assert not Course.objects.filter(slug__in=[form["slug"], form["slug"].lower()]).exists()


def _zip(entries: list[tuple[str, bytes]], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, blob in entries:
            archive.writestr(name, blob)
    return buffer.getvalue()


def _central_directory_patched(blob: bytes, offset: int, value: int) -> bytes:
    """The zip with one 2-byte field of its (single) central directory entry replaced."""
    at = blob.index(b"PK\x01\x02") + offset
    return blob[:at] + struct.pack("<H", value) + blob[at + 2:]


def _lying_zip(inflated: int, claimed: int, entries: int = 1) -> bytes:
    """A zip bomb as written by hand: each entry's header claims `claimed` bytes, while its deflate stream
    inflates to `inflated`; with entries > 1, every central-directory entry points at the same data."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    stream = b"".join(packer.compress(b"\0" * (1 << 20)) for _ in range(inflated >> 20)) + packer.flush()
    crc = zlib.crc32(b"\0" * claimed)
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(stream), claimed, 6, 0) + b"a.toml"
    names = [b"a.toml", *(f"a{i}.toml".encode() for i in range(1, entries))]
    central = b"".join(
        struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(stream), claimed, len(name), 0, 0,
                    0, 0, 0, 0) + name for name in names)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, entries, entries, len(central), len(local) + len(stream), 0)
    return local + stream + central + end


ONE = b'slug = "zip-one"\ntitle = "t"\nstatement = "s"\nreference = "x = 1"\n'
BAD_UPLOADS = {
    "deep.toml": (b"a = " + b"[" * 5_000 + b"]" * 5_000, "nested too deeply"),
    "deep-tables.toml": (b"a = " + b"{b = " * 2_000 + b"1" + b"}" * 2_000, "nested too deeply"),
    "nul.toml": (ONE.replace(b'"t"', b'"a\\u0000b"'), "NUL character"),
    "bomb.zip": (_zip([(f"f{i}.toml", b" " * 1_900_000) for i in range(6)]), "unzips to more than 10 MB"),
    "many.zip": (_zip([(f"f{i}.toml", b"") for i in range(201)]), "catalog files; at most 200"),
    # 20 entries sharing one deflate stream: each inflated it again (101 s in one web request)
    "overlapping.zip": (_lying_zip(50_000_000, 100, entries=20), "entries that share their data"),
    "encrypted.zip": (_central_directory_patched(_zip([("a.toml", ONE)]), 8, 0x1), "not a zip archive this server"),
    "method-99.zip": (_central_directory_patched(_zip([("a.toml", ONE)], zipfile.ZIP_STORED), 10, 99),
                      "not a zip archive this server"),
    # Python reads at most 4,300 digits of an integer: tomllib raised a bare ValueError, the job "failed"
    "long-int.toml": (ONE + b"[params]\nx0 = " + b"9" * 5_000 + b"\n", "too many digits"),
    "huge-param.toml": (ONE + b"[params]\nx0 = " + b"9" * 400 + b"\n", "integer of 400 digits"),
    # hex escapes the reading limit but not str(): a 500 in the message that quoted it
    "huge-hex.toml": (ONE + b"[params]\nx0 = 0x" + b"f" * 4_000 + b"\n", "too many digits"),
}


@pytest.mark.parametrize("name", list(BAD_UPLOADS))
def test_an_import_that_is_deep_nul_a_zip_bomb_or_unreadable_is_refused_with_a_message(
    known: KnownCourse, teacher: Any, name: str
) -> None:
    blob, message = BAD_UPLOADS[name]
    assert message in _imported(known, teacher, name, blob), name
    assert not Assignment.objects.filter(slug="zip-one").exists()


def test_a_zip_entry_is_inflated_only_as_far_as_its_header_claims() -> None:
    """The header says 100 bytes, the stream inflates to 200 MB: archive.read() built all 200 MB in the web
    process (2 GB and 7 s for a 2 GB stream) before cutting it to 100; read a chunk at a time, it never does."""
    from catalog.uploads import uploaded_files

    upload = io.BytesIO(_lying_zip(200_000_000, 100))
    upload.name, upload.size = "bomb.zip", len(upload.getvalue())  # type: ignore[attr-defined]
    tracemalloc.start()
    try:
        files, _ = uploaded_files(upload)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(name, len(text)) for name, text in files] == [("a.toml", 100)]
    assert peak < 5_000_000, f"inflating the bomb's entry took {peak / 1e6:.0f} MB"


def _imported(known: KnownCourse, teacher: Any, name: str, blob: bytes) -> str:
    """The page an upload leads to, after the maintenance worker has run its import job (when it is readable)."""
    upload = io.BytesIO(blob)
    upload.name = name
    client = logged_in(teacher, raise_request_exception=False)
    response = client.post(f"/staff/courses/{known.course.slug}/import/", {"catalog": upload})
    assert response.status_code == 302, name
    if "/staff/jobs/" in response["Location"]:  # the upload was readable: the worker parses each file
        job_run(job_id=int(response["Location"].rstrip("/").rsplit("/", 1)[1]))
    response = client.get(response["Location"])
    assert response.status_code == 200, name
    return str(response.content.decode())


@pytest.mark.parametrize(("field", "value", "message"), [
    ("params", "x0 = " + "[" * 3_000 + "]" * 3_000, "nested too deeply"),
    ("variants", "x0 = " + "{a = " * 2_000 + "1" + "}" * 2_000, "nested too deeply"),
    ("params", 'x0 = 1.5\ny0 = -0.5\nnote = "\\u0000"', "NUL character"),
    ("reference", "x" + ".a" * 9_900, "nested too deeply to compile"),
    ("reference", "-" * 19_000 + "1", "chains more than 50 unary operators"),
    ("opens_at", "9999-12-31T23:59", "in the years 1900 to 9000"),
    ("params", "x0 = " + "9" * 5_000, "too many digits"),  # past Python's integer-text limit: was a 500
    ("params", "x0 = " + "9" * 400 + "\ny0 = 1.0", "must be a finite number, got an integer of 400 digits"),
    ("variants", "x0 = {min = 1, max = " + "9" * 400 + "}", "finite number"),
    ("due_at", "0001-01-01T00:00", "in the years 1900 to 9000"),
])
def test_the_authoring_form_refuses_what_the_database_or_the_parser_cannot_hold(
    known: KnownCourse, teacher: Any, field: str, value: str, message: str
) -> None:
    data = form_post(slug="hostile-form", time_zone="America/New_York")
    data[field] = value
    client = logged_in(teacher, raise_request_exception=False)
    response = client.post(f"/staff/courses/{known.course.slug}/assignments/new/", data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Assignment.objects.filter(slug="hostile-form").exists()


def test_a_forged_part_count_builds_no_more_than_fifty_forms(known: KnownCourse, teacher: Any) -> None:
    """parts-TOTAL_FORMS = 100000 built and rendered 1,050 part forms (Django's default absolute_max):
    ~5 s of CPU and a 3 MB page per request."""
    data = form_post(slug="many-parts")
    data["parts-TOTAL_FORMS"] = "100000"
    response = logged_in(teacher, raise_request_exception=False).post(
        f"/staff/courses/{known.course.slug}/assignments/new/", data)
    assert response.status_code == 400
    page = response.content.decode()
    assert "at most 50" in page
    assert page.count('name="parts-') < 60 * 12  # at most 50 forms' fields (nine each, plus DELETE), not 1,050
    assert not Assignment.objects.filter(slug="many-parts").exists()


def test_one_unreadable_file_of_an_import_is_refused_on_its_own_line(known: KnownCourse, teacher: Any) -> None:
    """The readable file is loaded and the other reported: the job no longer "failed on our side" after
    it had already published the first."""
    good = ONE.replace(b'"zip-one"', b'"zip-good"')
    page = _imported(known, teacher, "two.zip", _zip([("good.toml", good), ("long.toml", b"x0 = " + b"9" * 5_000)]))
    assert "failed on our side" not in page
    assert "long.toml" in page and "too many digits" in page
    assert "good.toml" in page


def test_an_extension_past_the_year_9000_is_refused(known: KnownCourse, teacher: Any) -> None:
    Assignment.objects.filter(id=known.a.id).update(time_zone="America/New_York")
    bob = known.users["bob"].username
    response = logged_in(teacher, raise_request_exception=False).post(
        f"/staff/assignments/{known.a.slug}/extensions/", {"username": bob, "due_at": "9999-12-31T23:59"}, follow=True)
    assert response.status_code == 400  # the form comes back with what was typed
    assert "in the years 1900 to 9000" in response.content.decode()
    assert not Extension.objects.filter(assignment=known.a).exists()


def test_a_body_past_the_upload_limit_is_a_json_413_and_stores_nothing(student: Any) -> None:
    from grader.models import Submission

    body = b'{"answers": {"x.grad": "' + b"1" * (3 * 1024 * 1024) + b'"}}'  # past DATA_UPLOAD_MAX_MEMORY_SIZE
    response = api(student).generic("POST", "/api/v1/assignments/visual-walkthrough/submissions/", body,
                                    content_type="application/json")
    assert response.status_code == 413
    assert "larger than" in response.json()["detail"]
    assert not Submission.objects.filter(student=student.user).exists()


def test_a_roster_file_with_a_nul_is_refused_on_its_line_before_anything_is_written(known: KnownCourse,
                                                                                     teacher: Any) -> None:
    from django.contrib.auth import get_user_model

    upload = io.BytesIO(b"username,name\nnul-roster-one,Ada\x00Lovelace\n")
    upload.name = "roster.csv"
    response = logged_in(teacher).post(f"/staff/courses/{known.course.slug}/roster/", {"file": upload})
    assert response.status_code == 400
    assert "line 2: contains a NUL character" in response.content.decode()
    assert not get_user_model().objects.filter(username="nul-roster-one").exists()


def test_staff_api_errors_are_messages_naming_the_field(known: KnownCourse, teacher: Any) -> None:
    """A null `dry_run` answered DRF's Python repr ("{'dry_run': [ErrorDetail(string=…)]}"); a null
    justification named only its key; a NUL in a justification's key was queued for jsonb (a 500 on
    PostgreSQL)."""
    client = api(teacher)
    regrade = client.post(f"/api/v1/assignments/{known.a.slug}/regrade/", {"dry_run": None}, format="json")
    assert regrade.status_code == 400
    assert regrade.json()["detail"] == "dry_run: This field may not be null."
    publish = f"/api/v1/staff/assignments/{known.a.slug}/publish/"
    null = client.post(publish, {"justifications": {"trivial-answer:parts.x.grad": None}}, format="json")
    assert null.status_code == 400
    assert null.json()["errors"] == {"justifications.trivial-answer:parts.x.grad": "This field may not be null."}
    for key in ("a\x00", "", "k" * 201):
        response = client.post(publish, {"justifications": {key: "why"}}, format="json")
        assert response.status_code == 400, key
        assert "vetting reason code" in response.json()["errors"]["justifications"]
    assert not known.a.authoring_jobs.exists()


@pytest.mark.parametrize("query", [{"correct": "maybe"}, {"status": "zzz"}, {"infra": "yes"}])
def test_a_staff_list_filter_it_cannot_read_is_a_400_not_the_whole_list(known: KnownCourse, teacher: Any,
                                                                        query: dict[str, str]) -> None:
    response = api(teacher).get(f"/api/v1/assignments/{known.a.slug}/submissions/", query)
    assert response.status_code == 400
    assert response.json()["detail"].startswith(f"{next(iter(query))} must be one of")
    assert api(teacher).get(f"/api/v1/assignments/{known.a.slug}/submissions/",
                            {"correct": "false", "status": "graded"}).status_code == 200


def test_a_file_that_trips_a_bug_is_refused_alone_and_the_others_are_reported(
        known: KnownCourse, teacher: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import authoring.runs as runs

    real = runs.catalog_file_load

    def flaky(*, name: str, **kwargs: Any) -> Any:
        if name == "bug.toml":
            raise KeyError("a bug")
        return real(name=name, **kwargs)

    monkeypatch.setattr(runs, "catalog_file_load", flaky)
    page = _imported(known, teacher, "two.zip",
                     _zip([("good.toml", ONE.replace(b'"zip-one"', b'"zip-good"')), ("bug.toml", ONE)]))
    assert "failed on our side" not in page
    assert "bug.toml: could not be loaded: an error on our side (logged)" in page
    assert "good.toml" in page


def test_a_refused_override_keeps_what_was_typed(known: KnownCourse, teacher: Any) -> None:
    """The error banner came back over an empty form: part reset to the first, score and comment gone."""
    sub = known.submissions[("bob", "a", 1)]
    parts = [part["part"] for part in known_parts(sub)]
    chosen = parts[-1]
    response = logged_in(teacher).post(f"/staff/submissions/{sub.id}/override/",
                                       {"part": chosen, "score": "7", "comment": "Both paths named."})
    assert response.status_code == 400
    page = response.content.decode()
    assert "The score must be between" in page
    assert f'<option value="{chosen}" selected>' in page
    assert 'value="7"' in page and ">Both paths named.</textarea>" in page
    assert not ScoreOverride.objects.filter(submission=sub).exists()


def known_parts(submission: Any) -> list[dict[str, Any]]:
    from grader.selectors import result_document

    return list(result_document(submission=submission, release="answer_key")["parts"])


def test_the_regrade_page_says_unpublished_edits_are_not_used(known: KnownCourse, teacher: Any) -> None:
    """A preview after saving (not publishing) a tolerance change said '0 scores change' without a word."""
    client = logged_in(teacher)
    page = client.get(f"/staff/assignments/{known.a.slug}/regrades/").content.decode()
    assert "not published yet" not in page
    Assignment.objects.filter(id=known.a.id).update(draft={"slug": known.a.slug})
    page = client.get(f"/staff/assignments/{known.a.slug}/regrades/").content.decode()
    assert "saved edits that are not published yet" in page and f"/staff/assignments/{known.a.slug}/publish/" in page
