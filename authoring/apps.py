from __future__ import annotations

from django.apps import AppConfig


class AuthoringConfig(AppConfig):
    """Authoring: forms, preview, vetting, publishing and catalog loading. No models of its own (an
    assignment, its versions and authoring jobs are stored by the assignments app)."""

    name = "authoring"
