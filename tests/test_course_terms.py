"""A course lives for many terms: its export imports into another course as that course's copies
(never touching the first), and importing a course's own unchanged export changes nothing."""

from __future__ import annotations

import pytest

from assignments.models import Assignment, AssignmentVersion, Course
from assignments.services import course_demo
from authoring.catalog_load import PUBLISHED, UNCHANGED, catalog_file_load
from catalog.export import assignment_toml

pytestmark = pytest.mark.django_db


def _exported(slug: str) -> bytes:
    return assignment_toml(assignment=Assignment.objects.get(slug=slug)).encode("utf-8")


def test_an_unchanged_export_imported_again_is_unchanged_not_a_new_version() -> None:
    versions = AssignmentVersion.objects.filter(assignment__slug="detach").count()
    outcome = catalog_file_load(name="detach.toml", raw=_exported("detach"), course=course_demo(), other_courses=False)
    assert outcome.state == UNCHANGED, outcome
    assert AssignmentVersion.objects.filter(assignment__slug="detach").count() == versions


def test_last_terms_export_imports_into_a_new_course_as_its_own_copy() -> None:
    source = Assignment.objects.get(slug="detach")
    versions = AssignmentVersion.objects.filter(assignment=source).count()
    term = Course.objects.create(slug="autograd-spring", title="Autograd, spring term")
    raw = _exported("detach")
    outcome = catalog_file_load(name="detach.toml", raw=raw, course=term, other_courses=False)
    assert outcome.state == PUBLISHED and outcome.slug == "detach-autograd-spring", outcome
    assert any("belongs to another course" in note for note in outcome.notes)
    copy = Assignment.objects.get(slug="detach-autograd-spring")
    assert copy.course == term and copy.published and copy.title == source.title
    source.refresh_from_db()
    assert source.course == course_demo() and AssignmentVersion.objects.filter(assignment=source).count() == versions
    again = catalog_file_load(name="detach.toml", raw=raw, course=term, other_courses=False)
    assert again.state == UNCHANGED and again.slug == "detach-autograd-spring"
