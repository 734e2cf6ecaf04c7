"""What course operations add to grading: audited overrides, regrades and the results they replaced.

A Result row always holds the counted score. Whatever replaces it (a regrade, an override) first
copies the old one into ResultRevision, so no result is ever lost.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from assignments.models import Assignment
from grader.models import Submission


class Regrade(models.Model):
    """One regrade of an assignment (or of one submission): previewed first, then applied."""

    class Status(models.TextChoices):
        PREVIEWING = "previewing"
        PREVIEWED = "previewed"
        APPLYING = "applying"
        APPLIED = "applied"
        STALE = "stale"  # the assignment changed after the preview: preview again
        FAILED = "failed"

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="regrades")
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, null=True, blank=True,
                                   related_name="regrades", help_text="Set when one submission is regraded alone")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                                     related_name="+")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PREVIEWING)
    fingerprint = models.CharField(max_length=64, blank=True, help_text="What grading depended on at preview")
    checked = models.PositiveIntegerField(default=0, help_text="Graded submissions compared")
    changes = models.JSONField(default=list, blank=True,
                               help_text="[{submission, student, old, new, score_changed}] of the preview")
    applied = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    previewed_at = models.DateTimeField(null=True, blank=True)
    applied_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"regrade #{self.pk} of {self.assignment_id} ({self.status})"

    @property
    def score_change_count(self) -> int:
        """The submissions whose score changes: the count the preview, the history and the API give."""
        return sum(1 for change in self.changes if change.get("score_changed"))

    @property
    def feedback_only_count(self) -> int:
        """The submissions whose result changes with the same score (feedback, or the maximum)."""
        return len(self.changes) - self.score_change_count


class ScoreOverride(models.Model):
    """A staff member set one part's score by hand. Append-only: the audit trail."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="overrides")
    part = models.CharField(max_length=64)
    score_before = models.FloatField()
    score_after = models.FloatField()
    comment = models.TextField(help_text="Shown to the student")
    by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.part} of #{self.submission_id}: {self.score_before:g} → {self.score_after:g}"


class ResultRevision(models.Model):
    """A result as it was before a regrade or an override replaced it."""

    class Reason(models.TextChoices):
        REGRADE = "regrade"
        OVERRIDE = "override"

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="revisions")
    reason = models.CharField(max_length=10, choices=Reason.choices)
    regrade = models.ForeignKey(Regrade, on_delete=models.SET_NULL, null=True, blank=True, related_name="revisions")
    override = models.ForeignKey(ScoreOverride, on_delete=models.SET_NULL, null=True, blank=True,
                                 related_name="revisions")
    score = models.FloatField()
    max_score = models.FloatField()
    document = models.JSONField()
    highlight = models.JSONField(default=dict, blank=True)
    replaced_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["replaced_at", "id"]
        constraints = [
            # applying a regrade twice (a redelivered task) replaces each result once
            models.UniqueConstraint(fields=["submission", "regrade"], name="one_revision_per_regrade",
                                    condition=models.Q(regrade__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"#{self.submission_id} before {self.reason}: {self.score:g}/{self.max_score:g}"
