"""What grading asks of the apps built on it, named by dotted paths in settings (as Django names its
backends), so the grading workflow imports none of them:

- GRADER_SCORES_CHANGED_HOOK: `callable(changed: list[(submission_id, student_id)])`, called after the
  results of those submissions committed (the LTI app sends the counted scores to the LMS gradebook);
- GRADER_STAFF_SUBMISSIONS_HOOK: `callable(request, slug) -> Response`, the course staff's answer to
  GET /api/v1/assignments/<slug>/submissions/ (everyone's submissions, filterable: course operations);
- GRADER_FRAME_ANCESTORS_HOOK: `callable(request) -> origins` that may frame the pages (grader/headers.py).

An empty setting turns a hook off.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cache
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

log = logging.getLogger(__name__)


@cache
def resolve(path: str) -> Callable[..., Any] | None:
    return import_string(path) if path else None


def scores_changed(changed: list[tuple[int, int]]) -> None:
    """Tell the apps above that these (submission, student) pairs have new results. Never raises:
    the results have committed, and what the apps do with them is theirs to retry."""
    hook = resolve(settings.GRADER_SCORES_CHANGED_HOOK)
    if hook is None or not changed:
        return
    try:
        hook(changed)
    except Exception:
        log.exception("the scores-changed hook failed for submissions %s", [pair[0] for pair in changed])


def staff_submissions(request: Any, slug: str) -> Any | None:
    """The staff view of an assignment's submissions, or None when no app provides one."""
    hook = resolve(settings.GRADER_STAFF_SUBMISSIONS_HOOK)
    return None if hook is None else hook(request, slug)
