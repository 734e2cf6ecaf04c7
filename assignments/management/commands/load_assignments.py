"""python manage.py load_assignments [--check] [PATH…] — upsert catalog files by slug, or only vet them.

A folder holding a course.toml ([course] slug, title) loads into that course (created if needed).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from assignments.authored_checks import authored_mismatches
from assignments.catalog_check import catalog_check
from assignments.catalog_export import COURSE_FILE
from assignments.models import Course
from assignments.reference import ReferenceError
from assignments.services import assignment_upsert, course_demo
from assignments.spec import CatalogError, spec_from_file
from assignments.variants import variant_get


class Command(BaseCommand):
    help = "Load assignment TOML files (default: the shipped catalog) into the demo course."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="*", help="TOML files or folders of them")
        parser.add_argument("--no-check", action="store_true",
                            help="do not run the reference programs to cross-check expected values")
        parser.add_argument("--check", action="store_true",
                            help="vet the files as publishing would and write nothing: exit 1 with one "
                                 "'file: field: problem' line per reason")

    def handle(self, *args: Any, **options: Any) -> None:
        roots = [Path(p) for p in options["paths"]] or [settings.GRADER_CATALOG_DIR]
        files = _catalog_files(roots)
        if options["check"]:
            lines = catalog_check(paths=files)
            for line in lines:
                self.stdout.write(line)
            if lines:
                raise CommandError(f"{len(lines)} reason(s) in {len(files)} file(s)", returncode=1)
            self.stdout.write(f"{len(files)} file(s) pass")
            return
        failures = 0
        for path in files:
            course = _course_of(path)
            try:
                message = _load_one(path, course=course, check=not options["no_check"])
            except (CatalogError, ReferenceError) as exc:
                failures += 1
                self.stderr.write(f"error: {exc}")
                continue
            except (TypeError, ValueError) as exc:  # a value the validation did not foresee
                failures += 1
                self.stderr.write(f"error: {path.name}: {type(exc).__name__}: {exc}")
                continue
            self.stdout.write(message)
        if failures:
            raise CommandError(f"{failures} of {len(files)} file(s) not loaded", returncode=2)


def _course_of(path: Path) -> Course:
    """The course of a course-as-code folder (its course.toml), else the demo course."""
    marker = path.parent / COURSE_FILE
    if not marker.exists():
        return course_demo()
    try:
        data = tomllib.loads(marker.read_text(encoding="utf-8"))["course"]
        course, _ = Course.objects.get_or_create(slug=str(data["slug"]), defaults={"title": str(data["title"])})
    except (OSError, KeyError, TypeError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CommandError(f"{marker}: course: must be [course] slug = …, title = … ({exc})", returncode=2) from None
    return course


def _catalog_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.glob("*.toml") if p.name != COURSE_FILE))
        elif path.exists():
            files.append(path)
        else:
            raise CommandError(f"{path}: no such file or folder", returncode=2)
    if not files:
        raise CommandError("no .toml files found", returncode=2)
    return files


def _load_one(path: Path, *, course: Any, check: bool) -> str:
    spec = spec_from_file(path)
    with transaction.atomic():
        assignment, created = assignment_upsert(spec=spec, course=course)
        if check:
            try:
                variant = variant_get(assignment=assignment, params=assignment.params)
            except ReferenceError as exc:
                raise CatalogError(spec.path, "reference", str(exc)) from None
            try:
                problems = authored_mismatches(assignment=assignment, variant=variant)
            except ReferenceError as exc:
                raise CatalogError(spec.path, "reference", str(exc)) from None
            if problems:
                raise CatalogError(spec.path, problems[0][0], problems[0][1])
    notes = variant.analysis_data().get("notes", []) if check else []
    warnings = "".join(f"\n  note: {note}" for note in notes)  # e.g. path enumeration capped on a big graph
    return f"{'created' if created else 'updated'} {assignment.slug} ({path.name}){warnings}"
