"""Template context for every page: whether the header links to the staff pages."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from assignments.access import staff_courses


def staff_link(request: HttpRequest) -> dict[str, Any]:
    """True for a TA or instructor of any course (one query, only on pages that draw the header)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"staff_link": False}
    return {"staff_link": SimpleLazyObject(lambda: staff_courses(user=user).exists())}
