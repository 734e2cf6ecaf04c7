"""Courses, assignments, their parts and the cached reference of each variant."""

from __future__ import annotations

from functools import cached_property
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from assignments.part_config import ChoiceConfig, CodeConfig, PartConfig, SymbolicConfig, config_load, config_parse

C = TypeVar("C", SymbolicConfig, CodeConfig, ChoiceConfig)


class Release(models.TextChoices):
    """How much of the feedback on a wrong attempt a student sees, each level adding to the one before."""

    VERDICT = "verdict"
    WORDS = "words"
    PICTURE = "picture"
    FULL_PICTURE = "full_picture"
    ANSWER_KEY = "answer_key"


RELEASES = tuple(Release.values)  # in order: a level shows everything the ones before it show
RELEASE_BEFORE, RELEASE_AFTER = Release.PICTURE, Release.ANSWER_KEY  # the defaults
RELEASE_CHOICES = [
    (Release.VERDICT, "Verdict: right or wrong, and the score"),
    (Release.WORDS, "Words: the verdict and the diagnosis"),
    (Release.PICTURE, "Picture: words and the picture, hiding what gives a wrong part away"),
    (Release.FULL_PICTURE, "Full picture: words and the whole picture"),
    (Release.ANSWER_KEY, "Answer key: all of it, the expected answers too"),
]


def release_at_least(level: str, least: str) -> bool:
    return RELEASES.index(level) >= RELEASES.index(least)


class Course(models.Model):
    slug = models.SlugField(unique=True)
    title = models.CharField(max_length=200)
    release_before = models.CharField(max_length=16, choices=RELEASE_CHOICES, default=RELEASE_BEFORE,
                                      help_text="Feedback a student sees before the reveal moment")
    release_after = models.CharField(max_length=16, choices=RELEASE_CHOICES, default=RELEASE_AFTER,
                                     help_text="Feedback a student sees from the reveal moment on")

    def __str__(self) -> str:
        return self.title


class Membership(models.Model):
    class Role(models.TextChoices):
        STUDENT = "student"
        TA = "ta", "TA"
        INSTRUCTOR = "instructor"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.STUDENT)
    section = models.CharField(max_length=64, blank=True, default="", help_text="Tutorial group or section, if any")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "course"], name="one_membership_per_course")]

    def __str__(self) -> str:
        return f"{self.user} in {self.course} ({self.role})"


class LmsPerson(models.Model):
    """Who an account is in the LMS it came from: the platform's user id (the LTI `sub`) and, when the LMS
    shares it, the school's id of the person (the LIS person_sourcedid, Canvas's "SIS User ID", Moodle's
    ID number). Kept up to date by every LTI launch and roster sync; read by the gradebook exports."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lms_person")
    lms_id = models.CharField(max_length=255, help_text="The platform's id of the user (LTI sub)")
    sis_id = models.CharField(max_length=255, blank=True, help_text="The school's id of the person, if shared")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.user} in the LMS: {self.sis_id or self.lms_id}"


class Assignment(models.Model):
    class Counts(models.TextChoices):
        BEST = "best"
        LAST = "last"

    class Reveal(models.TextChoices):
        NEVER = "never"
        AFTER_DUE = "after_due"
        AFTER_CLOSE = "after_close"
        AFTER_ATTEMPTS = "after_attempts"  # once the student has no attempt left

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="assignments", null=True, blank=True)
    slug = models.SlugField(unique=True)
    title = models.CharField(max_length=200)
    statement = models.TextField(help_text="Markdown with $…$ math")
    params = models.JSONField(default=dict, help_text="Seed values of the parameters")
    variant_ranges = models.JSONField(default=dict, blank=True, help_text="Per-parameter ranges or choices")
    reference_program = models.TextField()
    published = models.BooleanField(default=True)
    opens_at = models.DateTimeField(null=True, blank=True)
    due_at = models.DateTimeField(null=True, blank=True)
    closes_at = models.DateTimeField(null=True, blank=True)
    max_attempts = models.PositiveIntegerField(null=True, blank=True, help_text="Empty means unlimited")
    counts = models.CharField(max_length=8, choices=Counts.choices, default=Counts.BEST)
    late_penalty = models.JSONField(default=list, blank=True, help_text="[[hours_late, factor], …]")
    time_zone = models.CharField(max_length=64, default="UTC", help_text="Dates are shown to students in this zone")
    rate_limit = models.PositiveIntegerField(null=True, blank=True,
                                             help_text="Submissions a minute; empty: the site default")
    hints_after = models.PositiveIntegerField(default=0, help_text="Hints are shown after this many attempts")
    reveal = models.CharField(max_length=16, choices=Reveal.choices, default=Reveal.NEVER,
                              help_text="When release_after takes over from release_before")
    release_before = models.CharField(max_length=16, choices=RELEASE_CHOICES, null=True, blank=True,
                                      help_text="Feedback before the reveal moment; empty: the course's")
    release_after = models.CharField(max_length=16, choices=RELEASE_CHOICES, null=True, blank=True,
                                     help_text="Feedback from the reveal moment on; empty: the course's")
    draft = models.JSONField(null=True, blank=True, help_text="Catalog data of edits not yet published")
    version = models.PositiveIntegerField(default=0, help_text="Number of the last published version")
    archived_at = models.DateTimeField(null=True, blank=True, help_text="Deleted while it had submissions")
    source_path = models.CharField(max_length=300, blank=True)
    source_hash = models.CharField(max_length=64, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def releases(self) -> tuple[str, str]:
        """The feedback levels (before, after the reveal moment): this assignment's, else its course's."""
        course = self.course
        before = self.release_before or (course.release_before if course else RELEASE_BEFORE)
        after = self.release_after or (course.release_after if course else RELEASE_AFTER)
        return before, after


class Part(models.Model):
    class Kind(models.TextChoices):
        NUMERIC = "numeric"
        SYMBOLIC = "symbolic"
        CODE = "code"
        CHOICE = "choice"

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="parts")
    key = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.NUMERIC)
    order = models.PositiveIntegerField(default=0)
    prompt = models.TextField(blank=True)
    points = models.FloatField(default=1.0)
    rel_tol = models.FloatField(default=1e-4)
    abs_tol = models.FloatField(default=1e-6)
    hint = models.TextField(blank=True)
    expected = models.JSONField(null=True, blank=True, help_text="Optional cross-check of the reference")
    config = models.JSONField(default=dict, blank=True, help_text="Kind-specific settings (code mode, …)")

    class Meta:
        ordering = ["assignment", "order"]
        constraints = [models.UniqueConstraint(fields=["assignment", "key"], name="unique_part_key")]

    def __str__(self) -> str:
        return f"{self.assignment.slug}:{self.key}"

    def clean(self) -> None:
        """The config is validated when a part is saved through a form (the catalog validates its own)."""
        def fail(name: str, problem: str) -> ValidationError:
            return ValidationError({"config": f"{name}: {problem}"})

        config_parse(self.kind, self.config or {}, params=self.assignment.params, fail=fail)

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.__dict__.pop("kind_config", None)  # the typed view follows the stored JSON
        super().save(*args, **kwargs)

    @cached_property
    def kind_config(self) -> PartConfig:
        """The typed kind-specific config (validated when saved, so read without checks)."""
        return config_load(self.kind, self.config or {})

    @property
    def symbolic(self) -> SymbolicConfig:
        return self._config_as(SymbolicConfig)

    @property
    def code(self) -> CodeConfig:
        return self._config_as(CodeConfig)

    @property
    def choice(self) -> ChoiceConfig:
        return self._config_as(ChoiceConfig)

    def _config_as(self, kind: type[C]) -> C:
        config = self.kind_config
        if not isinstance(config, kind):
            raise TypeError(f"part {self.key} is a {self.kind} part, not a {kind.kind} part")
        return config


class Variant(models.Model):
    """One set of parameter values and its reference analysis, computed once and cached."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="variants")
    params = models.JSONField()
    reference_hash = models.CharField(max_length=64, help_text="Hash of program, params and part keys")
    analysis = models.JSONField(null=True, blank=True, help_text="Reference analysis at the seed point")
    point_analyses = models.JSONField(
        null=True, blank=True, help_text="{points, analyses} at several points, for symbolic and code parts"
    )
    error = models.TextField(blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["assignment", "reference_hash"], name="one_variant_per_reference")
        ]

    def __str__(self) -> str:
        return f"{self.assignment.slug} {self.params}"

    @property
    def is_ready(self) -> bool:
        return self.analysis is not None

    @property
    def cache_key(self) -> tuple[Any, ...] | None:
        """Names this row's analyses for a process-wide cache (grading/variants.py); None until computed.
        computed_at tells apart a row created again with the id of one a rolled-back preview made."""
        return (self.pk, self.reference_hash, self.computed_at) if self.computed_at is not None else None

    def analysis_data(self) -> dict[str, Any]:
        assert self.analysis is not None
        return self.analysis


class AssignmentVersion(models.Model):
    """What one publish made live, as catalog TOML, with the vetting reasons it overrode."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    catalog = models.TextField(help_text="The assignment as catalog TOML")
    overrides = models.JSONField(default=list, blank=True, help_text="[{field, problem, justification}, …]")
    published_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    published_at = models.DateTimeField()

    class Meta:
        ordering = ["assignment", "-number"]
        constraints = [models.UniqueConstraint(fields=["assignment", "number"], name="one_version_number")]

    def __str__(self) -> str:
        return f"{self.assignment.slug} v{self.number}"


class Extension(models.Model):
    """A later deadline and/or extra attempts for one student on one assignment."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="extensions")
    student = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="extensions")
    due_at = models.DateTimeField(null=True, blank=True, help_text="Replaces the due date for this student")
    closes_at = models.DateTimeField(null=True, blank=True, help_text="Replaces the closing date for this student")
    extra_attempts = models.PositiveIntegerField(default=0)
    reason = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["assignment", "student"], name="one_extension_per_student")]

    def __str__(self) -> str:
        return f"{self.student} on {self.assignment.slug}"


class AuthoringJob(models.Model):
    """Authoring work that runs reference programs (a preview, an import, a publish from the API),
    done by a worker on the maintenance lane while the page polls; only the instructor who asked sees it."""

    class Kind(models.TextChoices):
        PREVIEW = "preview"
        IMPORT = "import"
        PUBLISH = "publish"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="authoring_jobs")
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, null=True, blank=True,
                                   related_name="authoring_jobs")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                     related_name="authoring_jobs")
    payload = models.JSONField(help_text="What to run: the form's catalog data and trial answers, or the files")
    result = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    sandbox_seconds = models.FloatField(default=0.0, help_text="Wall time of its sandbox runs (budgeted)")

    class Meta:
        indexes = [models.Index(fields=["status", "created_at"], name="authoring_job_status")]

    def __str__(self) -> str:
        return f"{self.kind} job {self.pk} ({self.status})"
