"""Shapes of the staff API: courses, gradebook, everyone's submissions,
misconception analytics and regrades. Staff see expected values; nothing here reaches students."""

from __future__ import annotations

from rest_framework import serializers

from grader.api.serializers import SecondsField, SubmissionSerializer


class CourseSerializer(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField()
    role = serializers.ChoiceField(choices=["ta", "instructor"])


class GradebookCellSerializer(serializers.Serializer):
    score = serializers.FloatField(allow_null=True, help_text="The counted score (best or last); null: none graded")
    attempts = serializers.IntegerField()
    late = serializers.BooleanField(help_text="The counted submission came after the due date")
    overridden = serializers.BooleanField()
    regraded = serializers.BooleanField()
    submission = serializers.IntegerField(allow_null=True, help_text="Id of the counted submission")
    extended = serializers.BooleanField(help_text="The student has an extension on this assignment")
    extension = serializers.DateTimeField(allow_null=True, help_text="The extension's due (or closing) date")


class GradebookStudentSerializer(serializers.Serializer):
    username = serializers.CharField()
    name = serializers.CharField()
    section = serializers.CharField()
    sis_id = serializers.CharField(help_text="The school's id of the person, as the LMS gave it (LTI launch or "
                                             "roster sync); empty when unknown")
    total = serializers.FloatField()
    scores = serializers.DictField(child=GradebookCellSerializer(), help_text="Assignment slug → cell")


class GradebookAssignmentSerializer(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField()
    max_score = serializers.FloatField()
    due_at = serializers.DateTimeField(allow_null=True)


class GradebookSerializer(serializers.Serializer):
    course = serializers.CharField()
    assignments = GradebookAssignmentSerializer(many=True)
    students = GradebookStudentSerializer(many=True)


class StaffSubmissionSerializer(SubmissionSerializer):
    student = serializers.CharField(source="student.username")
    answers = serializers.DictField()
    code = serializers.DictField()


class PathCountSerializer(serializers.Serializer):
    path = serializers.ListField(child=serializers.CharField())
    count = serializers.IntegerField()
    share = serializers.FloatField(help_text="Of the part's wrong attempts")


class EdgeCountSerializer(serializers.Serializer):
    edge = serializers.ListField(child=serializers.CharField(),
                                 help_text="[source, target] of a wrong local derivative")
    count = serializers.IntegerField()
    share = serializers.FloatField(help_text="Of the part's wrong attempts")


class PartAnalyticsSerializer(serializers.Serializer):
    attempts = serializers.IntegerField(help_text="Graded attempts that answered the part")
    wrong = serializers.IntegerField()
    kinds = serializers.DictField(child=serializers.IntegerField(), help_text="Diagnosis kind → wrong attempts")
    kind_shares = serializers.DictField(child=serializers.FloatField())
    paths = PathCountSerializer(many=True)
    edges = EdgeCountSerializer(many=True)
    students = serializers.IntegerField()
    first = serializers.DictField(help_text='{"correct": n, "kinds": {kind: n}} of each student\'s first attempt')
    final = serializers.DictField(help_text="The same for each student's latest attempt")
    by_day = serializers.ListField(child=serializers.DictField(), help_text='[{"day", "attempts", "wrong"}]')
    stuck_after = serializers.IntegerField()
    stuck = serializers.ListField(child=serializers.DictField(),
                                  help_text='[{"student", "attempts", "last_kind", "last_submission", "submissions"}]')


class AnalyticsSerializer(serializers.Serializer):
    assignment = serializers.CharField()
    parts = serializers.DictField(child=PartAnalyticsSerializer(), help_text="Part key → analytics")


class RegradeRequestSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField(help_text="true: preview (writes nothing); false: apply the preview `regrade`")
    regrade = serializers.IntegerField(required=False, help_text="Id of a finished preview, to apply it")
    wait = SecondsField(required=False, default=0, min_value=0, max_value=20,
                                  help_text="Seconds to wait for the queue to finish (at most 20)")


class RegradeChangeSerializer(serializers.Serializer):
    submission = serializers.IntegerField()
    student = serializers.CharField()
    attempt = serializers.IntegerField(allow_null=True)
    old = serializers.FloatField()
    new = serializers.FloatField()
    max_score = serializers.FloatField()
    score_changed = serializers.BooleanField(help_text="false: only the feedback changes")
    reasons = serializers.ListField(child=serializers.CharField(), default=list,
                                    help_text="Why it changes: the reference, the points, the tolerance, the late "
                                              "factor, an override kept, or the feedback only")


class RegradeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    checked = serializers.IntegerField(help_text="Graded submissions compared")
    score_change_count = serializers.IntegerField(help_text="Submissions whose score changes")
    feedback_only_count = serializers.IntegerField(help_text="Submissions whose result changes with the same score")
    changes = RegradeChangeSerializer(many=True, help_text="Exactly the submissions whose results change")
    applied = serializers.IntegerField()
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    previewed_at = serializers.DateTimeField(allow_null=True)
    applied_at = serializers.DateTimeField(allow_null=True)
