"""LTI role URIs → the values of `assignments.models.Membership.Role`. Pure, no Django."""

from __future__ import annotations

from collections.abc import Iterable

_CONTEXT = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
_TA_SUBROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
_STAFF_NAMES = {"Instructor", "Administrator", "ContentDeveloper"}


def _context_name(role: str) -> str:
    """'Instructor' for the full URI and for the short form some platforms (Moodle, NRPS) send."""
    if role.startswith(_CONTEXT):
        return role[len(_CONTEXT):]
    return role if "/" not in role and ":" not in role else ""


def course_role_from_lti(roles: Iterable[str]) -> str:
    """TA when the teaching-assistant sub-role is present, instructor for context staff, else student.

    Institution roles (an LMS admin browsing a course) grant nothing here: only context roles count.
    """
    roles = list(roles)
    if _TA_SUBROLE in roles or "TeachingAssistant" in roles:
        return "ta"
    if any(_context_name(role) in _STAFF_NAMES for role in roles):
        return "instructor"
    return "student"
