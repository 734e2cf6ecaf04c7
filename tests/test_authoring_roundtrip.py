"""Course as code, losslessly: export → import into an empty database → identical grading."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from assignments.models import Assignment, Course, Variant
from assignments.services import course_demo
from catalog.export import course_files, files_zip
from grader.models import Submission
from grading.answer_grading import answers_grade
from grading.variants import variant_get
from tests.seed_answers import CODE, FORMULAS, NUMERIC

pytestmark = pytest.mark.django_db
# Right answers, plus a typical wrong one per numeric part (so diagnoses are compared, not just scores).
WRONG = {"visual-walkthrough": {"x.grad": "4", "y.grad": "3"}, "multiple-paths": {"x.grad": "6"},
         "positive-gradient": {"x.grad": "4", "direction": "falling"}, "negative-gradient": {"direction": "falling"},
         "accumulation": {"x.grad": "4"}, "non-scalar": {"x.grad": "[1, 2, 3]"}, "detach": {"x.grad": "3"}}


def _graded(slug: str, answers: dict[str, str], code: dict[str, str]) -> dict[str, Any]:
    assignment = Assignment.objects.get(slug=slug)
    variant = variant_get(assignment=assignment, params=assignment.params)
    document = answers_grade(assignment=assignment, variant=variant, answers=answers, code=code,
                             expected_shown=True).document
    return {"score": document["score"],
            "parts": [(p["part"], p["score"], p["diagnosis"]["kind"], p["diagnosis"]["message"], p.get("expected"))
                      for p in document["parts"]]}


def _all_grades() -> dict[str, list[dict[str, Any]]]:
    slugs = sorted(Assignment.objects.filter(course=course_demo()).values_list("slug", flat=True))
    return {slug: [_graded(slug, {**NUMERIC.get(slug, {}), **FORMULAS.get(slug, {})}, CODE.get(slug, {})),
                   _graded(slug, WRONG.get(slug, {"x.grad": "1"}), {})] for slug in slugs}


def test_export_then_import_into_an_empty_database_grades_identically(tmp_path: Path) -> None:
    Assignment.objects.exclude(course=course_demo()).delete()
    Assignment.objects.filter(course=course_demo(), source_path="").delete()  # authored by other tests
    before = _all_grades()
    assert len(before) >= 10
    archive = files_zip(files=course_files(course=course_demo()))

    Submission.objects.all().delete()
    Variant.objects.all().delete()
    Assignment.objects.all().delete()
    Course.objects.all().delete()
    with zipfile.ZipFile(io.BytesIO(archive)) as unpacked:
        unpacked.extractall(tmp_path)
    call_command("load_assignments", str(tmp_path), stdout=io.StringIO())

    assert Course.objects.get().slug == "autograd-101"
    assert _all_grades() == before
