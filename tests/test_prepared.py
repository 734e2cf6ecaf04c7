"""Prepared queries (infra/prepared.py): compiled once, they must read and write exactly what the
ordinary queryset would, for any values, and refuse a queryset whose SQL depends on its values."""

from __future__ import annotations

import uuid
import warnings
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from assignments.models import Assignment, Membership, Part
from grader.models import Submission
from grader.selectors import submission_visible
from infra.prepared import PreparedError, PreparedQuery, prefetched, prepared_query, prepared_update
from tests.clients import api


def _submit(person: Any, slug: str = "detach", answer: str = "12") -> int:
    response = api(person).post(f"/api/v1/assignments/{slug}/submissions/", {"answers": {"x.grad": answer}},
                                format="json")
    assert response.status_code == 202, response.content
    return int(response.json()["id"])


@prepared_query
def _own(submission_id: int, student_id: int) -> QuerySet[Submission]:
    staff = Exists(Membership.objects.filter(user_id=student_id, course_id=OuterRef("assignment__course_id"),
                                             role="instructor"))
    return Submission.objects.select_related("assignment", "student").annotate(staff=staff).filter(
        id=submission_id, student_id=student_id)


@pytest.mark.django_db
def test_a_prepared_query_reads_what_the_queryset_reads_for_every_values(student: Any, other_student: Any) -> None:
    mine, theirs = _submit(student), _submit(other_student)
    for submission_id, student_id in [(mine, student.user.pk), (theirs, other_student.user.pk),
                                      (mine, other_student.user.pk), (theirs, student.user.pk), (10**9, 1)]:
        prepared = _own(submission_id=submission_id, student_id=student_id)
        ordinary = list(_own.build(submission_id=submission_id, student_id=student_id))
        assert [(s.id, s.answers, s.created_at, s.assignment.slug, s.student.username, s.staff) for s in prepared] \
            == [(s.id, s.answers, s.created_at, s.assignment.slug, s.student.username, s.staff) for s in ordinary]
    assert [s.id for s in _own(submission_id=mine, student_id=student.user.pk)] == [mine]
    assert _own(submission_id=mine, student_id=other_student.user.pk) == []  # someone else's: nothing


@pytest.mark.django_db
def test_it_is_one_query_and_its_json_and_datetimes_come_back_typed(student: Any) -> None:
    submission_id = _submit(student)
    _own(submission_id=submission_id, student_id=student.user.pk)
    with CaptureQueriesContext(connection) as queries:
        (row,) = _own(submission_id=submission_id, student_id=student.user.pk)
    assert len(queries) == 1
    assert row.answers == {"x.grad": "12"} and isinstance(row.created_at, datetime)
    assert timezone.is_aware(row.created_at)


@pytest.mark.django_db
def test_with_prepared_queries_off_every_call_is_the_ordinary_queryset(student: Any, settings: Any) -> None:
    settings.GRADER_PREPARED_QUERIES = False  # the seam of docs/decisions/0002-prepared-queries.md
    submission_id = _submit(student)
    fresh = PreparedQuery(_own.build)
    assert [s.id for s in fresh(submission_id=submission_id, student_id=student.user.pk)] == [submission_id]
    assert fresh(submission_id=submission_id, student_id=student.user.pk + 1) == []
    assert fresh._compiled == {}  # nothing compiled: Django built and compiled the queryset each call


@pytest.mark.django_db
def test_a_value_of_another_type_runs_the_ordinary_queryset(student: Any) -> None:
    submission_id = _submit(student)
    assert _own(submission_id=submission_id, student_id=None) == []  # an anonymous user: IS NULL, no row
    assert [s.id for s in _own(submission_id=submission_id, student_id=str(student.user.pk))] == [submission_id]
    assert _own(submission_id=True, student_id=student.user.pk) == list(  # a bool is not taken for an int
        _own.build(submission_id=True, student_id=student.user.pk))


@pytest.mark.django_db
def test_a_datetime_value_counts_like_the_orm_on_this_database(student: Any) -> None:
    _submit(student)
    _submit(student, answer="4")

    @prepared_query
    def counts(student_id: int, since: datetime) -> QuerySet[Any]:
        return Submission.objects.filter(student_id=student_id).values("student_id").annotate(
            recent=Count("id", filter=Q(created_at__gte=since))).values("recent").order_by()

    now = timezone.now()
    assert counts(student_id=student.user.pk, since=now - timedelta(minutes=1)) == [{"recent": 2}]
    assert counts(student_id=student.user.pk, since=now + timedelta(minutes=1)) == [{"recent": 0}]
    assert counts(student_id=student.user.pk + 1000, since=now) == []


@pytest.mark.django_db
def test_a_prepared_update_changes_the_rows_the_update_would_and_says_how_many(student: Any) -> None:
    first, second = _submit(student), _submit(student, answer="4")

    @prepared_update
    def claim(submission_id: int, token: uuid.UUID, now: datetime) -> tuple[QuerySet[Submission], dict[str, Any]]:
        return Submission.objects.filter(id=submission_id, status="queued"), {
            "status": "running", "claim": token, "started_at": now, "deliveries": F("deliveries") + 1}

    token, now = uuid.uuid4(), timezone.now()
    assert claim(submission_id=first, token=token, now=now) == 1
    assert claim(submission_id=first, token=uuid.uuid4(), now=now) == 0  # no longer queued: not claimed twice
    row = Submission.objects.get(id=first)
    assert (row.status, row.claim, row.started_at, row.deliveries) == ("running", token, now, 1)
    assert Submission.objects.get(id=second).status == "queued"


@pytest.mark.django_db
def test_prefetched_rows_serve_the_related_manager_without_a_query() -> None:
    assignment = Assignment.objects.get(slug="visual-walkthrough")
    prefetched(assignment, "parts", list(Part.objects.filter(assignment=assignment)))
    with CaptureQueriesContext(connection) as queries:
        keys = [part.key for part in assignment.parts.all()]
        back = assignment.parts.all()[0].assignment
    assert len(queries) == 0 and back is assignment
    assert keys == list(Part.objects.filter(assignment=assignment).values_list("key", flat=True))


@pytest.mark.django_db
@pytest.mark.parametrize("build", [
    lambda slug: Assignment.objects.filter(slug__contains=slug),  # the value is not the parameter: '%…%'
    lambda slug: Assignment.objects.filter(  # which column depends on the value: another SQL
        **{"slug" if slug.startswith("~") else "title": slug}),
], ids=["wrapped", "shape"])
def test_a_queryset_whose_sql_depends_on_the_value_is_refused(build: Any) -> None:
    def typed(slug: str) -> QuerySet[Assignment]:
        return build(slug)

    with pytest.raises(PreparedError):
        PreparedQuery(typed)(slug="detach")


def test_parameters_must_be_declared_with_a_type_it_can_place() -> None:
    def untyped(ids: list[int]) -> QuerySet[Assignment]:
        return Assignment.objects.filter(id__in=ids)

    with pytest.raises(PreparedError):
        PreparedQuery(untyped)


@pytest.mark.django_db
def test_a_lock_keeps_its_for_update_where_the_database_has_one(student: Any) -> None:
    @prepared_query
    def locked(user_id: int) -> QuerySet[Any]:
        return Membership.objects.select_for_update().filter(user_id=user_id).values_list("id", flat=True)[:1]

    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        assert locked(user_id=student.user.pk)
    assert ("FOR UPDATE" in queries[-1]["sql"]) == connection.features.has_select_for_update


@pytest.mark.django_db
def test_the_status_poll_is_one_query_and_sees_only_ones_own(student: Any, other_student: Any) -> None:
    submission_id = _submit(student)
    submission_visible(user=student.user, submission_id=submission_id)
    with CaptureQueriesContext(connection) as queries:
        own = submission_visible(user=student.user, submission_id=submission_id)
    assert own is not None and own.id == submission_id and len(queries) == 1
    assert submission_visible(user=other_student.user, submission_id=submission_id) is None


@pytest.mark.django_db
def test_an_id_beyond_64_bits_is_a_404_not_a_500(student: Any) -> None:
    for path in (f"/api/v1/submissions/{2**64}/", f"/api/v1/submissions/{2**64}/graph.svg"):
        assert api(student).get(path).status_code == 404
    assert submission_visible(user=student.user, submission_id=-(2**70)) is None


@pytest.mark.django_db
def test_a_value_compared_with_a_small_integer_column_keeps_that_branch(student: Any) -> None:
    """A placeholder beyond a column's range would let Django compile that branch away (PostgreSQL)."""
    submission_id = _submit(student)

    @prepared_query
    def by_id_or_attempt(n: int) -> QuerySet[Submission]:
        return Submission.objects.filter(Q(id=n) | Q(attempt=n), student_id__isnull=False)

    attempt = Submission.objects.get(id=submission_id).attempt
    assert attempt is not None
    assert {s.id for s in by_id_or_attempt(n=attempt)} == {s.id for s in by_id_or_attempt.build(n=attempt)}
    assert submission_id in {s.id for s in by_id_or_attempt(n=attempt)}


@pytest.mark.django_db
@pytest.mark.parametrize("build", [
    lambda since: Submission.objects.filter(created_at__lte=since, created_at__date=since.date()),  # its date
    lambda since: Submission.objects.filter(created_at__lte=since, attempt=since.hour),  # its hour
], ids=["date", "hour"])
def test_a_queryset_using_part_of_a_value_is_refused(build: Any) -> None:
    def typed(since: datetime) -> QuerySet[Submission]:
        return build(since)

    with pytest.raises(PreparedError):
        PreparedQuery(typed)(since=timezone.now())


@pytest.mark.django_db
def test_a_queryset_using_a_prefix_of_a_string_is_refused() -> None:
    def typed(key: str) -> QuerySet[Submission]:
        return Submission.objects.filter(idempotency_key=key, error_reason=key[:9])

    with pytest.raises(PreparedError):
        PreparedQuery(typed)(key="client-key-1")


@pytest.mark.django_db
def test_a_naive_datetime_is_read_in_time_zone_as_the_orm_reads_it(student: Any, settings: Any) -> None:
    settings.TIME_ZONE = "America/New_York"
    _submit(student)

    @prepared_query
    def since(at: datetime) -> QuerySet[Submission]:
        return Submission.objects.filter(created_at__gte=at)

    naive = timezone.now().replace(tzinfo=None) + timedelta(hours=1)  # an hour ahead as UTC; behind in New York
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # Django warns about the naive value, as it should
        assert [s.id for s in since(at=naive)] == [s.id for s in since.build(at=naive)]


@pytest.mark.django_db
def test_prefetched_rows_still_filter_to_their_instance() -> None:
    assignment = Assignment.objects.get(slug="visual-walkthrough")
    prefetched(assignment, "parts", list(Part.objects.filter(assignment=assignment)))
    assert Part.objects.exclude(assignment=assignment).exists()
    assert assignment.parts.filter(points__gte=0).count() == Part.objects.filter(assignment=assignment).count()


def test_a_prepared_lock_outside_a_transaction_is_refused_where_locks_exist(live_db: None, student: Any) -> None:
    """Real autocommit (no test transaction around it): FOR UPDATE there would lock nothing."""
    @prepared_query
    def locked(user_id: int) -> QuerySet[Any]:
        return Membership.objects.select_for_update().filter(user_id=user_id).values_list("id", flat=True)[:1]

    with transaction.atomic():
        assert locked(user_id=student.user.pk)  # compiled inside the transaction
    if not connection.features.has_select_for_update:
        assert locked(user_id=student.user.pk)  # SQLite has no row locks: it serialises writers instead
        return
    with pytest.raises(transaction.TransactionManagementError):
        locked(user_id=student.user.pk)
