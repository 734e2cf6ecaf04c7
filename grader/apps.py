from __future__ import annotations

from django.apps import AppConfig


class GraderConfig(AppConfig):
    name = "grader"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from grader import checks  # noqa: F401  (registers system checks)
