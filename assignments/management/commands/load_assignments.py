"""python manage.py load_assignments [PATH…] — upsert catalog files by slug."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from assignments.services import assignment_upsert, course_demo
from assignments.spec import CatalogError, spec_from_file
from grader.grading import expected_mismatches, formula_mismatches
from grader.reference import ReferenceError
from grader.variants import variant_get


class Command(BaseCommand):
    help = "Load assignment TOML files (default: the shipped catalog) into the demo course."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="*", help="TOML files or folders of them")
        parser.add_argument("--no-check", action="store_true",
                            help="do not run the reference programs to cross-check expected values")

    def handle(self, *args: Any, **options: Any) -> None:
        files = _catalog_files([Path(p) for p in options["paths"]] or [settings.GRADER_CATALOG_DIR])
        course = course_demo()
        failures = 0
        for path in files:
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


def _catalog_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(path.glob("*.toml")))
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
                problems = expected_mismatches(assignment=assignment, analysis=variant.analysis_data())
                problems += formula_mismatches(assignment=assignment, variant=variant)
            except ReferenceError as exc:
                raise CatalogError(spec.path, "reference", str(exc)) from None
            if problems:
                raise CatalogError(spec.path, problems[0][0], problems[0][1])
    notes = variant.analysis_data().get("notes", []) if check else []
    warnings = "".join(f"\n  note: {note}" for note in notes)  # e.g. path enumeration capped on a big graph
    return f"{'created' if created else 'updated'} {assignment.slug} ({path.name}){warnings}"
