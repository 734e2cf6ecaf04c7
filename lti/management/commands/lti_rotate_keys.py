"""Publish a new signing key; it signs after LTI_KEY_PUBLISH_SECONDS. Use instead of django-lti's rotate_keys."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from lti.keys import key_rotate


class Command(BaseCommand):
    help = "Publish a new tool key (signing with it starts after LTI_KEY_PUBLISH_SECONDS); retire superseded keys."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--retire-after-days", type=int, default=7,
                            help="retire keys older than this that the signing key has superseded")

    def handle(self, *args: Any, **options: Any) -> None:
        key = key_rotate(retire_after=timedelta(days=options["retire_after_days"]))
        self.stdout.write(f"Published key {key}; it signs from {settings.LTI_KEY_PUBLISH_SECONDS} s from now.")
