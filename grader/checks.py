"""Start-up checks: fail early on a configuration that cannot grade."""

from __future__ import annotations

import shutil
from typing import Any

from django.conf import settings
from django.core import checks
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
        return [Error(f"impossible sandbox limits: {exc}", hint="see SANDBOX_* in docs/operations.md",
                      id="grader.E003")]
    return []


PREPARED_VERIFIED_ON = (5, 2)  # the Django series infra/prepared.py was verified against


@register()
def check_prepared_queries(app_configs: Any, **kwargs: Any) -> list[checks.CheckMessage]:
    """infra/prepared.py reuses the ORM compiler's internals: on another Django series it may compile
    differently. Its tests (tests/test_prepared.py) say whether it still reads what the ORM reads."""
    import django

    if not settings.GRADER_PREPARED_QUERIES or django.VERSION[:2] == PREPARED_VERIFIED_ON:
        return []
    verified = ".".join(map(str, PREPARED_VERIFIED_ON))
    return [checks.Warning(f"prepared queries were verified on Django {verified}, this is {django.get_version()}",
                           hint="run tests/test_prepared.py on this version, or set GRADER_PREPARED_QUERIES=0 "
                                "(docs/decisions/0002-prepared-queries.md)", id="grader.W001")]

