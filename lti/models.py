"""What the tool adds to django-lti's rows: courses, bindings, service hosts, used nonces and URLs, score deliveries."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from lti_tool.models import LtiContext, LtiDeployment, LtiRegistration, LtiResourceLink

from assignments.models import Assignment, Course


class ContextCourse(models.Model):
    """The course an LMS context (a course site) maps to: written by `lti_register --course --context`,
    or on the context's first launch. The only way a launch finds a course."""

    context = models.OneToOneField(LtiContext, on_delete=models.CASCADE, related_name="course_link")
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="lti_contexts")
    roster_synced_at = models.DateTimeField(null=True, blank=True)
    roster_error = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"{self.context} → {self.course.slug}"


class CourseLmsOptions(models.Model):
    """What a course's instructors chose for its LMS launches."""

    course = models.OneToOneField(Course, on_delete=models.CASCADE, related_name="lms_options")
    link_roster_accounts = models.BooleanField(
        default=False, help_text="A launch matching a roster student of the course (by LMS id or email) uses "
                                 "that account instead of making an LMS account")

    def __str__(self) -> str:
        return f"{self.course.slug}: link roster accounts {'on' if self.link_roster_accounts else 'off'}"


class LinkAssignment(models.Model):
    """A resource link bound to one assignment, and the LMS gradebook column it reports to."""

    resource_link = models.OneToOneField(LtiResourceLink, on_delete=models.CASCADE, related_name="assignment_link")
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="lti_links")
    line_item_url = models.URLField(max_length=1000, blank=True)

    def __str__(self) -> str:
        return f"{self.resource_link} → {self.assignment.slug}"


class FrameOrigin(models.Model):
    """An origin allowed to frame the tool, beyond the registration's issuer and auth URL."""

    registration = models.ForeignKey(LtiRegistration, on_delete=models.CASCADE, related_name="frame_origins")
    origin = models.CharField(max_length=300, help_text="scheme://host[:port], e.g. https://school.instructure.com")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["registration", "origin"], name="one_frame_origin_row")]

    def __str__(self) -> str:
        return self.origin


class ServiceHost(models.Model):
    """A host the tool may call for this platform's services (AGS, NRPS), beyond the hosts of the
    registration's auth, token and key-set URLs and its frame origins."""

    registration = models.ForeignKey(LtiRegistration, on_delete=models.CASCADE, related_name="service_hosts")
    host = models.CharField(max_length=300, help_text="host or host:port, e.g. school.instructure.com")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["registration", "host"], name="one_service_host_row")]

    def __str__(self) -> str:
        return self.host


class DeploymentLaunch(models.Model):
    """When a deployment last launched the tool (shown to operators on the platforms page)."""

    deployment = models.OneToOneField(LtiDeployment, on_delete=models.CASCADE, related_name="last_launch")
    at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.deployment} at {self.at:%Y-%m-%d %H:%M}"


class UsedNonce(models.Model):
    """An id_token nonce seen once: the unique constraint refuses its second use atomically."""

    issuer = models.CharField(max_length=255)
    nonce = models.CharField(max_length=255)
    used_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["issuer", "nonce"], name="nonce_used_once")]


class UsedRegistrationUrl(models.Model):
    """A dynamic registration URL that has registered a platform: it registers no other. The unique digest
    claims the URL atomically while its registration runs; a failed run gives the claim back, and a run
    that never finished (its process killed) leaves a claim that is taken over after a while."""

    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the URL's signed token")
    used_at = models.DateTimeField(help_text="When the claim was made (or last taken over)")
    registered = models.BooleanField(default=False, help_text="The registration finished: the URL is used up")
    registration = models.ForeignKey(LtiRegistration, null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")


class ScoreDelivery(models.Model):
    """The latest counted score of one student on one LMS line item, and whether it arrived."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"

    link = models.ForeignKey(LinkAssignment, on_delete=models.CASCADE, related_name="score_deliveries")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lti_score_deliveries")
    lti_user_id = models.CharField(max_length=255, help_text="The platform's sub for the student")
    score_given = models.FloatField()
    score_maximum = models.FloatField()
    comment = models.TextField(blank=True)
    timestamp_ms = models.BigIntegerField(help_text="Milliseconds since the epoch; never goes backwards")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING, db_index=True)
    tries = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["link", "user"], name="one_score_delivery_per_link_user")]

    def __str__(self) -> str:
        return f"{self.user} {self.score_given:g}/{self.score_maximum:g} on {self.link} ({self.status})"
