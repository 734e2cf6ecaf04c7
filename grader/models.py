"""Submissions and their results. The database is the source of truth for grading."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from assignments.models import Assignment, Variant


class Submission(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        GRADED = "graded"
        ERROR = "error"

    student = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="submissions")
    variant = models.ForeignKey(Variant, on_delete=models.PROTECT, related_name="submissions", null=True)
    answers = models.JSONField(default=dict, help_text="Part key → the text the student typed")
    code = models.JSONField(default=dict, blank=True, help_text="Part key → submitted source")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED, db_index=True)
    attempt = models.PositiveIntegerField(null=True, blank=True, help_text="Empty for infrastructure errors")
    error_reason = models.TextField(blank=True)
    deliveries = models.PositiveIntegerField(default=0, help_text="How often a worker started grading it")
    claim = models.UUIDField(null=True, blank=True, help_text="Token of the worker run that owns the row")
    created_at = models.DateTimeField(auto_now_add=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    graded_at = models.DateTimeField(null=True, blank=True)
    # Fairness (grader/fairness.py): code submissions run on their own queue; a student's code
    # beyond GRADER_CODE_IN_FLIGHT waits here with no enqueued_at ("held") until released.
    lane = models.CharField(max_length=8, default="numeric", help_text="numeric (numbers, formulas) or code")
    sandbox_seconds = models.FloatField(default=0.0, help_text="Wall time its code grading took")
    # A client's own name for this submission (the API's Idempotency-Key): sent again, say after a
    # timeout or a 503, it gets this submission back instead of a second one.
    idempotency_key = models.CharField(max_length=64, null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["student", "assignment"]), models.Index(fields=["student", "lane", "status"])]
        constraints = [models.UniqueConstraint(fields=["student", "idempotency_key"],
                                               condition=models.Q(idempotency_key__isnull=False),
                                               name="one_submission_per_idempotency_key")]

    def __str__(self) -> str:
        return f"#{self.pk} {self.assignment.slug} by {self.student} ({self.status})"


class Result(models.Model):
    submission = models.OneToOneField(Submission, on_delete=models.CASCADE, related_name="result")
    score = models.FloatField()
    max_score = models.FloatField()
    document = models.JSONField(help_text="The result document of SPEC §5, with expected values")
    highlight = models.JSONField(default=dict, blank=True, help_text="Edges and nodes to highlight in the graph")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.score:g}/{self.max_score:g} for #{self.submission_id}"


PENDING = (Submission.Status.QUEUED, Submission.Status.RUNNING)  # a worker has yet to finish it
FINISHED = (Submission.Status.GRADED, Submission.Status.ERROR)  # it has a result or an error to show

from grader.tokens import ApiToken  # noqa: E402  (registered with the grader app)

__all__ = ["FINISHED", "PENDING", "ApiToken", "Result", "Submission"]
