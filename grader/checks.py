"""Start-up checks: fail early on a configuration that cannot grade."""

from __future__ import annotations

import shutil
from typing import Any

from django.conf import settings
from django.core.checks import Error, register
from django.utils.module_loading import import_string


@register()
def check_graphviz(app_configs: Any, **kwargs: Any) -> list[Error]:
    if shutil.which("dot"):
        return []
    return [Error("Graphviz 'dot' is not installed; graph pictures cannot be drawn.",
                  hint="apt-get install graphviz (make setup does this as root)", id="grader.E001")]


@register()
def check_reference_runner(app_configs: Any, **kwargs: Any) -> list[Error]:
    try:
        import_string(settings.GRADER_REFERENCE_RUNNER)
    except ImportError as exc:
        return [Error(f"GRADER_REFERENCE_RUNNER cannot be imported: {exc}", id="grader.E002")]
    return []


@register()
def check_sandbox_limits(app_configs: Any, **kwargs: Any) -> list[Error]:
    from sandbox.limits import Limits, LimitsError, validate_limits

    try:
        validate_limits(Limits(**settings.SANDBOX_LIMITS))
    except (LimitsError, TypeError) as exc:
        return [Error(f"impossible sandbox limits: {exc}", hint="see SANDBOX_* in README", id="grader.E003")]
    return []
