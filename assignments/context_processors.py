"""Template context for every page: whether the header links to the staff pages, and whether the user may
create a course (the home page then links to the form)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from assignments.access import may_create_courses, staff_courses


def staff_link(request: HttpRequest) -> dict[str, Any]:
    """True for a TA or instructor of any course, or someone who may create one (queries only on pages that
    draw the header)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"staff_link": False, "may_create_courses": False}
    creator = SimpleLazyObject(lambda: may_create_courses(user=user))
    return {"staff_link": SimpleLazyObject(lambda: bool(creator) or staff_courses(user=user).exists()),
            "may_create_courses": creator}
