"""The shape of a signed launch's claims, checked before anything stores them.

A registered platform signs the id_token, but what it signs is still input: a `context` that is
a string, `roles` of numbers, a 5,000-character `sub`, name, e-mail or context title, an AGS or
NRPS claim that is not an object, or a NUL in any text made django-lti's sync raise (TypeError,
AttributeError, or PostgreSQL's DataError for its varchar columns): a 500 instead of the readable
refusal page. Each rule below names the claim, its type and the longest text django-lti keeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from infra.nested_data import HAS_NUL, TOO_DEEP, nested_nul_problem

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
URL_MAX = 200  # Django's URLField
MAX_DEPTH = 10
WALK_PROBLEMS = {TOO_DEEP: f"The launch nests its claims more than {MAX_DEPTH} levels deep.",
                 HAS_NUL: "The launch contains a NUL character (\\u0000) in a claim."}

# claim → longest text (None: any length); claims that are objects list their fields.
TEXT_CLAIMS: dict[str, int | None] = {"sub": 255, "name": 500, "given_name": 500, "family_name": 500,
                                      "email": 254, "picture": URL_MAX, LTI + "deployment_id": 255}
OBJECT_CLAIMS: dict[str, dict[str, int | None]] = {
    LTI + "context": {"id": 255, "label": 255, "title": 500},
    LTI + "resource_link": {"id": 255, "title": 500, "description": None},
    LTI + "tool_platform": {"guid": 255, "name": 500, "version": 500, "product_family_code": 500,
                            "url": URL_MAX, "contact_email": 254, "description": None},
    LTI + "custom": {},
    AGS: {"lineitems": URL_MAX, "lineitem": URL_MAX},
    NRPS: {"context_memberships_url": URL_MAX},
}
LIST_CLAIMS = (LTI + "roles", LTI + "role_scope_mentor")


def claims_problem(body: Mapping[str, Any]) -> str | None:
    """What is wrong with the launch's claims, in words for the LMS administrator; None if nothing."""
    if walked := nested_nul_problem(body, max_depth=MAX_DEPTH):
        return WALK_PROBLEMS[walked]
    for claim, limit in TEXT_CLAIMS.items():
        if claim in body and (problem := _text_problem(body[claim], limit)):
            return f"The claim {claim} {problem}."
    for claim, fields in OBJECT_CLAIMS.items():
        if claim not in body:
            continue
        value = body[claim]
        if not isinstance(value, dict):
            return f"The claim {claim} must be an object."
        for name, limit in fields.items():
            if name in value and (problem := _text_problem(value[name], limit)):
                return f"The claim {claim} field {name} {problem}."
    for claim in LIST_CLAIMS:
        value = body.get(claim, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            return f"The claim {claim} must be a list of texts."
    return None


def _text_problem(value: Any, limit: int | None) -> str | None:
    if not isinstance(value, str):
        return "must be text"
    if limit is not None and len(value) > limit:
        return f"is longer than {limit} characters"
    return None
