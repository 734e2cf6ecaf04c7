from __future__ import annotations

from django.apps import AppConfig


class LtiConfig(AppConfig):
    name = "lti"
    label = "lti"
    verbose_name = "LTI 1.3 tool"
    default_auto_field = "django.db.models.BigAutoField"
