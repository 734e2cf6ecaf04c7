"""Shapes of the authoring API: assignments as catalog TOML, publishing, and authoring jobs.
Instructors of the course only; the TOML holds the reference program, so nothing here reaches students."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from assignments.models import RELEASES
from authoring.course_copy import MAX_SHIFT_DAYS
from authoring.publishing import MAX_JUSTIFICATION
from grader.api.serializers import SecondsField

MAX_TOML = 1_000_000
MAX_REASON_CODE = 200  # "trivial-answer:parts.x.grad": a vetting code and the field it names


class TomlSerializer(serializers.Serializer):
    toml = serializers.CharField(max_length=MAX_TOML, trim_whitespace=False,
                                 help_text="One assignment as catalog TOML (the format of load_assignments)")


class AuthoredAssignmentSerializer(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField()
    course = serializers.CharField(source="course.slug")
    published = serializers.BooleanField()
    version = serializers.IntegerField(help_text="The last published version; 0: never published from here")
    has_draft = serializers.BooleanField(help_text="Saved edits wait for the next publish (students keep the live one)")
    archived = serializers.BooleanField()


class AuthoredDetailSerializer(AuthoredAssignmentSerializer):
    toml = serializers.CharField(help_text="The working copy as catalog TOML: the draft if any, else what is live")


class CourseFeedbackSerializer(serializers.Serializer):
    release_before = serializers.ChoiceField(choices=RELEASES, help_text="What a wrong attempt shows a student "
                                             "before the reveal moment (assignments without their own level)")
    release_after = serializers.ChoiceField(choices=RELEASES, help_text="… and from the reveal moment on")


class PublishSerializer(serializers.Serializer):
    justifications = serializers.DictField(child=serializers.CharField(max_length=MAX_JUSTIFICATION), required=False,
                                           default=dict, help_text="Vetting reason code → why it is acceptable")
    wait = SecondsField(min_value=0, max_value=20, default=0,
                                  help_text="Seconds to wait for the worker before answering 202 (at most 20)")

    def validate_justifications(self, value: dict[str, Any]) -> dict[str, Any]:
        """The keys are stored as sent: a NUL (which PostgreSQL's jsonb refuses) or a 1 MB key is a 400."""
        for code in value:
            if not code or len(code) > MAX_REASON_CODE or not code.isprintable():
                raise serializers.ValidationError(
                    f"each key must be a vetting reason code (printable, 1 to {MAX_REASON_CODE} characters), "
                    "as the refusal lists it")
        return value


class AuthoringJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    status = serializers.ChoiceField(choices=["queued", "running", "done", "failed"])
    result = serializers.JSONField(allow_null=True, help_text='publish: {"version": n}, or {"refused": [{code, '
                                                              'field, problem}]} listing every open vetting reason')


class CourseCopyRequestSerializer(serializers.Serializer):
    slug = serializers.SlugField(max_length=50, help_text="The new course's slug (unused)")
    title = serializers.CharField(max_length=200, required=False, default="",
                                  help_text="The new course's title (default: the source's)")
    shift_days = serializers.IntegerField(min_value=-MAX_SHIFT_DAYS, max_value=MAX_SHIFT_DAYS, required=False,
                                          allow_null=True, default=None,
                                          help_text="Days added to every open, due and close date")
    start = serializers.DateField(required=False, allow_null=True, default=None,
                                  help_text="Or: the new first day; dates move by the days from the course's first day")


class CourseCopySerializer(serializers.Serializer):
    slug = serializers.CharField(source="course.slug")
    title = serializers.CharField(source="course.title")
    shift_days = serializers.IntegerField()
    assignments = serializers.DictField(child=serializers.CharField(), source="slugs",
                                        help_text="Source assignment slug → the copy's slug")
    staff = serializers.IntegerField(help_text="Instructors and TAs copied")
    drafts_dropped = serializers.ListField(child=serializers.CharField(),
                                           help_text="Source slugs whose unpublished edits were not copied")
