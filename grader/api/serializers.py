"""Shapes of the JSON API (SPEC §6). Never exposes reference programs, parameter ranges or expected values
to students: only the fields named here leave the server."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import serializers

from assignments.models import Release, release_at_least
from chainrule.code_limits import MAX_CODE_CHARS
from grader.finished import MAX_WAIT_S
from grader.models import Submission
from grader.selectors import AssignmentRow, result_document, submission_error
from grading.answer_parsing import MAX_PARTS


class SourceField(serializers.CharField):
    """Text only: DRF's CharField turns `5` into the source "5" (then graded as broken code)."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError(f"must be the code as text, not {type(data).__name__}")
        return str(super().to_internal_value(data))


class SecondsField(serializers.FloatField):
    """A number of seconds in JSON: DRF's FloatField read `true` as 1 s and "5" as 5 s (the API takes JSON
    only, where a number is written bare)."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool):
            raise serializers.ValidationError("must be a number of seconds, not true or false")
        if not isinstance(data, (int, float)):
            raise serializers.ValidationError(f"must be a number of seconds (5, not {json.dumps(data)[:20]})")
        return float(super().to_internal_value(data))


class PartSerializer(serializers.Serializer):
    key = serializers.CharField()
    kind = serializers.CharField()
    points = serializers.FloatField()
    prompt = serializers.CharField()
    hint = serializers.CharField(help_text="Empty until the assignment's hints_after attempts are used")
    options = serializers.ListField(child=serializers.CharField(), help_text="Choice parts: the options")
    multiple = serializers.BooleanField(help_text="Choice parts: answer with a JSON list of options")


class AssignmentSummarySerializer(serializers.Serializer):
    slug = serializers.CharField(source="assignment.slug")
    title = serializers.CharField(source="assignment.title")
    course = serializers.CharField(source="assignment.course.slug")
    opens_at = serializers.DateTimeField(source="assignment.opens_at")
    due_at = serializers.DateTimeField(help_text="With your extension, if any")
    closes_at = serializers.DateTimeField(source="policy.closes_at")
    max_attempts = serializers.IntegerField(source="policy.max_attempts")
    time_zone = serializers.CharField(source="assignment.time_zone")
    counts = serializers.CharField(source="assignment.counts", help_text="best or last")
    late_penalty = serializers.JSONField(source="assignment.late_penalty", help_text="[[hours_late, factor], …]")
    hints_after = serializers.IntegerField(source="assignment.hints_after")
    reveal = serializers.CharField(source="assignment.reveal",
                                   help_text="When the feedback after takes over: never, after_due, after_close, "
                                             "after_attempts (your due date, closing date and attempts)")
    feedback = serializers.SerializerMethodField(
        help_text='The feedback on a wrong attempt: {"before": level, "after": level, "now": level}, each one of '
                  "verdict, words, picture, full_picture, answer_key (each adds to the one before)")
    answers_revealed = serializers.BooleanField(source="expected_shown",
                                                help_text="The expected answers are shown to you now")
    attempts_used = serializers.IntegerField()
    attempts_left = serializers.IntegerField(allow_null=True, help_text="null: unlimited")
    best_score = serializers.FloatField(allow_null=True)
    max_score = serializers.FloatField()
    url = serializers.SerializerMethodField()

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_feedback(self, row: AssignmentRow) -> dict[str, str]:
        before, after = row.assignment.releases
        return {"before": before, "after": after, "now": row.release}

    def get_url(self, row: AssignmentRow) -> str:
        return self.context["request"].build_absolute_uri(reverse("api-assignment", args=[row.assignment.slug]))


class AssignmentDetailSerializer(AssignmentSummarySerializer):
    # Both are empty before opens_at (the row hides them).
    statement = serializers.CharField(help_text="Markdown with $…$ math; empty before opens_at")
    parts = PartSerializer(many=True)
    your_values = serializers.DictField(help_text="Parameter values drawn for you (empty: the statement's values)")
    expected_answers = serializers.SerializerMethodField(
        help_text="Part key → expected answer for your values, once answers_revealed; null before, and "
                  "while your values are still being run (ask again in a moment)")
    answers_graph_svg_url = serializers.SerializerMethodField(
        help_text="How autograd got the answers (SVG), once they are revealed")

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_expected_answers(self, row: AssignmentRow) -> dict[str, Any] | None:
        key = self.context.get("answer_key")
        return key.answers if key is not None and not key.pending else None

    @extend_schema_field(OpenApiTypes.URI)
    def get_answers_graph_svg_url(self, row: AssignmentRow) -> str | None:
        if self.get_expected_answers(row) is None:
            return None
        return self.context["request"].build_absolute_uri(reverse("assignment-answers-graph",
                                                                  args=[row.assignment.slug]))


class SubmissionCreateSerializer(serializers.Serializer):
    answers = serializers.DictField(required=False, default=dict, help_text='Part key → answer text, e.g. "7"')
    code = serializers.DictField(child=SourceField(max_length=MAX_CODE_CHARS, trim_whitespace=False,
                                                   allow_blank=True),
                                 required=False, default=dict, help_text="Part key → Python source")
    wait = SecondsField(min_value=0, max_value=MAX_WAIT_S, default=0,
                                  help_text="Seconds (at most 20) to wait for grading: the graded submission "
                                            "(200) if it finishes within them, else 202 as without it")

    def validate_answers(self, answers: dict[str, Any]) -> dict[str, Any]:
        if len(answers) > MAX_PARTS:
            raise serializers.ValidationError(f"At most {MAX_PARTS} answers per submission.")
        return answers

    def validate_code(self, code: dict[str, str]) -> dict[str, str]:
        if len(code) > MAX_PARTS:
            raise serializers.ValidationError(f"At most {MAX_PARTS} code parts per submission.")
        return code


class SubmissionCreatedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()


class SubmissionSerializer(serializers.Serializer):
    """`context["release"]`: the feedback level of the viewer (grader.selectors.release_of: everything for
    the course's staff); `context["show_reason"]` (why grading failed) only for the course's staff."""

    id = serializers.IntegerField()
    assignment = serializers.CharField(source="assignment.slug")
    status = serializers.ChoiceField(choices=Submission.Status.choices)
    attempt = serializers.IntegerField(allow_null=True, help_text="null when grading failed (no attempt used)")
    created_at = serializers.DateTimeField()
    graded_at = serializers.DateTimeField(allow_null=True)
    result = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_result(self, submission: Submission) -> dict[str, Any] | None:
        release = self.context["release"]
        document = result_document(submission=submission, release=release)
        if document is None:
            return None
        graph = self.context["request"].build_absolute_uri(reverse("submission-graph", args=[submission.id]))
        pictured = release_at_least(release, Release.PICTURE)
        for part in document["parts"]:
            part.pop("graph_svg_url", None)
            if pictured and not part.get("correct") and part.get("answer"):  # unanswered: nothing to draw
                part["graph_svg_url"] = f"{graph}?{urlencode({'part': part['part']})}"
        return document

    @extend_schema_field(OpenApiTypes.STR)
    def get_error(self, submission: Submission) -> str | None:
        return submission_error(submission=submission, show_reason=self.context["show_reason"])


class ErrorsSerializer(serializers.Serializer):
    errors = serializers.DictField(child=serializers.CharField(), help_text="Field or part key → message")


class DetailSerializer(serializers.Serializer):
    detail = serializers.CharField()


# The answers every staff endpoint may give instead of its data (course operations, authoring).
STAFF_ONLY = {403: OpenApiResponse(DetailSerializer, description="A student of the course"),
              404: OpenApiResponse(DetailSerializer, description="Not a course you are staff of")}
