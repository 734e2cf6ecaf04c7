"""python manage.py create_user NAME --role student|ta|instructor [--course SLUG] [--token]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from assignments.models import Course, Membership
from assignments.services import course_demo
from grader.accounts import user_create


class Command(BaseCommand):
    help = "Create (or update) a user, enrol them in a course and optionally print an API token."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--role", choices=Membership.Role.values, required=True)
        parser.add_argument("--course", help="course slug (default: the demo course)")
        parser.add_argument("--password", help="password for the web login (default: unusable)")
        parser.add_argument("--token", action="store_true", help="print an API token")

    def handle(self, *args: Any, **options: Any) -> None:
        course = _course(options["course"])
        try:
            user, token = user_create(
                username=options["name"], role=options["role"], course=course,
                password=options["password"], with_token=options["token"],
            )
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from None
        self.stderr.write(f"{user.username}: {options['role']} in {course.slug}")
        if token:
            self.stdout.write(token)


def _course(slug: str | None) -> Course:
    if slug is None:
        return course_demo()
    try:
        return Course.objects.get(slug=slug)
    except Course.DoesNotExist:
        known = ", ".join(Course.objects.values_list("slug", flat=True)) or "none"
        raise CommandError(f"unknown course {slug!r} (known: {known})", returncode=2) from None
