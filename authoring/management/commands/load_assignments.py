"""python manage.py load_assignments [--check] [PATH…] — upsert catalog files by slug, or only vet them.

A file is published only when it passes vetting (authoring/catalog_load.py); one that fails is
kept as a draft with its `file: field: problem` lines (exit 1), one that cannot be graded at all is
refused (exit 2). A folder holding a course.toml ([course] slug, title; release_before and
release_after optional) loads into that course (created if needed) and sets its feedback levels.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, connections

from assignments.models import RELEASES, Course
from assignments.services import course_demo
from authoring.catalog_check import catalog_check
from authoring.catalog_load import DRAFT, DRAFT_EDITS, REFUSED, LoadOutcome, catalog_file_load
from catalog.errors import CatalogError
from catalog.export import COURSE_FILE
from catalog.spec import catalog_data
from infra.sandbox_pool import sandbox_status
from sandbox.client import SandboxError

MAX_JOBS = 8
log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Load assignment TOML files (default: the shipped catalog) into the demo course."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="*", help="TOML files or folders of them")
        parser.add_argument("--no-check", action="store_true",
                            help="run no reference program: new content is kept as drafts, to be vetted and "
                                 "published from the staff pages")
        parser.add_argument("--jobs", type=int, default=0, metavar="N",
                            help="files loaded at once, each running its references in the sandbox (default and "
                                 "most: as many as the sandboxes have slots, at most 8)")
        parser.add_argument("--check", action="store_true",
                            help="vet the files as publishing would and write nothing: exit 1 with one "
                                 "'file: field: problem' line per reason")

    def handle(self, *args: Any, **options: Any) -> None:
        roots = [Path(p) for p in options["paths"]] or [settings.GRADER_CATALOG_DIR]
        files = _catalog_files(roots)
        if options["check"]:
            lines = catalog_check(paths=files)
            for line in [*lines.refused, *lines.warnings]:
                self.stdout.write(line)
            if lines.refused:
                raise CommandError(f"{len(lines.refused)} reason(s) in {len(files)} file(s)", returncode=1)
            self.stdout.write(f"{len(files)} file(s) pass")
            return
        vet = not options["no_check"]
        loads = [_Load(path=path, raw=_read(path), course=_course_of(path)) for path in files]
        outcomes = []
        for outcome in _outcomes(loads, vet=vet, jobs=_jobs(options["jobs"], vet=vet, files=len(files))):
            outcomes.append(outcome)  # reported one by one, in order: each may run its reference for seconds
            self._report(outcome)
        refused = sum(1 for o in outcomes if o.state == REFUSED)
        drafts = sum(1 for o in outcomes if o.state in (DRAFT, DRAFT_EDITS))
        if refused:
            raise CommandError(f"{refused} of {len(files)} file(s) not loaded", returncode=2)
        if drafts:
            raise CommandError(f"{drafts} of {len(files)} file(s) kept as drafts: not published", returncode=1)

    def _report(self, outcome: LoadOutcome) -> None:
        if outcome.state == REFUSED:
            for line in outcome.lines:
                self.stderr.write(f"error: {line}")
            return
        self.stdout.write(outcome.summary() + "".join(f"\n  note: {note}" for note in outcome.notes))
        for line in outcome.lines:
            self.stdout.write(line)


@dataclass(frozen=True)
class _Load:
    path: Path
    raw: bytes
    course: Course

    def slug(self) -> str:
        """The slug the file names (its path when it names none readably): two files naming one slug
        are loaded one after the other, in their order."""
        try:
            slug = catalog_data(self.path.name, self.raw).get("slug")
        except CatalogError:  # refused on its own line when it is loaded
            slug = None
        return slug if isinstance(slug, str) else str(self.path)


def _jobs(requested: int, *, vet: bool, files: int) -> int:
    """How many files to load at once: `requested` (else as many as the sandboxes have slots), never more
    than those slots (a file waiting in a sandbox's queue past the client's allowance would be refused as
    "sandbox unavailable"). One inside a transaction: another thread's connection would not see what it
    holds (the course, say)."""
    if connection.in_atomic_block or not vet or files < 2:
        return 1
    try:
        slots = sum(int(s.get("slots", 0)) for s in sandbox_status().values() if "error" not in s)
    except SandboxError:
        slots = 0  # not known: the requested number, or one
    wanted = requested if requested > 0 else slots
    return max(1, min(MAX_JOBS, wanted, slots or wanted))


def _outcomes(loads: list[_Load], *, vet: bool, jobs: int) -> Iterator[LoadOutcome]:
    """Each file's outcome, in the files' order, loading `jobs` files at once. A file waits for the one
    before it that names the same slug, so the later one wins as it would alone. The reference runs happen
    with no transaction open (catalog_load), so the threads wait on the sandbox, not on each other's locks."""

    def load_one(load: _Load, before: Future[LoadOutcome] | None) -> LoadOutcome:
        if before is not None:
            before.exception()  # wait for it; its outcome is reported on its own
        try:
            return catalog_file_load(name=load.path.name, raw=load.raw, course=load.course, vet=vet)
        except Exception as exc:  # the loader's fault, not the file's: said on its line, the others still load
            log.exception("loading %s failed", load.path)
            return LoadOutcome(file=load.path.name, slug="", state=REFUSED,
                               lines=[f"{load.path.name}: internal error ({type(exc).__name__}: {exc}); "
                                      "nothing of it was loaded"])
        finally:
            if jobs > 1:
                connections.close_all()  # this thread's own connections

    if jobs == 1:
        yield from (load_one(load, None) for load in loads)
        return
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="load") as pool:
        last: dict[str, Future[LoadOutcome]] = {}
        futures = []
        for load in loads:  # submitted in order: a file's predecessor of its slug has started before it
            slug = load.slug()
            future = pool.submit(load_one, load, last.get(slug))
            last[slug] = future
            futures.append(future)
        for future in futures:
            yield future.result()


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CommandError(f"{path}: file: cannot be read ({exc.strerror})", returncode=2) from None


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
    levels = {name: data[name] for name in ("release_before", "release_after") if name in data}
    for name, level in levels.items():
        if level not in RELEASES:
            raise CommandError(f"{marker}: course.{name}: must be one of {', '.join(RELEASES)}, got {level!r}",
                               returncode=2)
    if levels:
        Course.objects.filter(pk=course.pk).update(**levels)
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
