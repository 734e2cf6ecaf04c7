"""The assignment form made comfortable: each part kind's config template is valid and explained, the trial
code box starts from the part's starter, Save and Preview sit in one bar at the top, and several parts can be
added at once (the page carries the empty part to copy)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from assignments.models import Course
from assignments.part_config import CONFIGS, config_parse
from assignments.services import membership_set
from authoring.config_templates import TEMPLATES, first_template
from catalog.errors import CatalogError
from catalog.toml_text import toml_loads
from tests.clients import logged_in
from tests.courseops_known import clone_assignment


@pytest.mark.parametrize("template", TEMPLATES, ids=[t.title for t in TEMPLATES])
def test_each_config_template_is_a_valid_config_with_its_fields_explained(template: Any) -> None:
    table = toml_loads(template.text, path="template", field="config")
    config = config_parse(template.kind, table, params={"x0": 2.0, "y0": 3.0},
                          fail=lambda field, problem: CatalogError("template", field, problem))
    assert isinstance(config, CONFIGS[template.kind])
    comments = [line for line in template.text.splitlines() if line.startswith("#")]
    assert len(comments) >= min(len(table), 2)  # the fields are explained, not only shown


def test_every_kind_and_code_mode_has_a_template() -> None:
    assert {t.kind for t in TEMPLATES} == set(CONFIGS)
    assert {toml_loads(t.text, path="t", field="c").get("mode") for t in TEMPLATES if t.kind == "code"} == {
        "function", "program", "fix"}
    assert first_template("numeric") == "" and "options" in first_template("choice")


@pytest.mark.django_db
def test_the_edit_page_has_the_bar_the_templates_the_part_to_copy_and_the_starter(make_user: Any) -> None:
    course = Course.objects.create(slug=f"comfort-{uuid.uuid4().hex[:6]}", title="Comfort")
    assignment = clone_assignment(slug="visual-walkthrough", course=course)
    teacher = make_user("instructor")
    membership_set(user=teacher.user, course=course, role="instructor")
    page = logged_in(teacher).get(f"/staff/assignments/{assignment.slug}/edit/").content.decode()
    bar = page[page.index('class="authoring-bar"'):page.index("</div>", page.index('class="authoring-bar"'))]
    assert 'form="assignment-form"' in bar and 'id="preview-button" class="secondary"' in bar
    assert page.index('id="preview"') < page.index('id="assignment-form"')  # the preview above the form
    assert "Save to get another empty part" not in page
    assert 'id="part-template"' in page and 'name="parts-__prefix__-kind"' in page and "data-add-parts" in page
    assert page.count('class="config-template"') == len(TEMPLATES) and "# The names students type" in page
    assert "def grad_z(x, y):\n    dz_dx = ...\n" in page  # the trial code box holds the starter


@pytest.mark.django_db
def test_home_links_to_a_new_course_only_for_those_who_may_create_one(make_user: Any) -> None:
    from django.contrib.auth.models import Permission

    creator, student = make_user("student", prefix="creator"), make_user("student")
    creator.user.user_permissions.add(Permission.objects.get(codename="add_course"))
    page = logged_in(creator).get("/").content.decode()
    assert 'href="/staff/courses/new/"' in page and 'class="staff-link"' in page  # a creator of no course yet
    plain = logged_in(student).get("/").content.decode()
    assert "/staff/courses/new/" not in plain and 'class="staff-link"' not in plain
