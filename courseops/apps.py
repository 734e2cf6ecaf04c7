from __future__ import annotations

from django.apps import AppConfig


class CourseopsConfig(AppConfig):
    """Running a course: roster, gradebook, overrides, regrades and misconception analytics."""

    name = "courseops"
    default_auto_field = "django.db.models.BigAutoField"
