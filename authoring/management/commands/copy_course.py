"""python manage.py copy_course SOURCE NEW [--title T] [--shift-days N] — a course copied into a new term."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from assignments.models import Course
from authoring.course_copy import CourseCopyError, course_copy


class Command(BaseCommand):
    help = ("Copy a course into a new one: assignments with their published versions, policies with dates "
            "shifted by --shift-days, and staff; no students or submissions. Copies get the slug "
            "<slug>-<NEW>.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source", help="slug of the course to copy")
        parser.add_argument("new", help="slug of the new course")
        parser.add_argument("--title", default="", help="title of the new course (default: the source's)")
        parser.add_argument("--shift-days", type=int, default=0,
                            help="days added to every open, due and close date (negative: earlier)")

    def handle(self, *args: Any, **options: Any) -> None:
        source = Course.objects.filter(slug=options["source"]).first()
        if source is None:
            raise CommandError(f"no course {options['source']!r}")
        if abs(options["shift_days"]) > 3660:
            raise CommandError("--shift-days must be within ten years (±3660)")
        try:
            copy = course_copy(source=source, slug=options["new"], title=options["title"],
                               shift=timedelta(days=options["shift_days"]))
        except CourseCopyError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"created {copy.course.slug} ({copy.course.title}): {len(copy.slugs)} assignments, "
                          f"{copy.staff} staff, dates shifted by {options['shift_days']} days")
        for old, new in copy.slugs.items():
            self.stdout.write(f"  {old} → {new}")
        for old in copy.drafts_dropped:
            self.stdout.write(f"  {old}: unpublished edits not copied (the copy has the published version)")
