"""The shape of a signed launch's claims, checked before anything stores them.

A registered platform signs the id_token, but what it signs is still input: a `context` that is
a string, `roles` of numbers, a 5,000-character `sub`, name, e-mail or context title, an AGS or
NRPS claim that is not an object, or a NUL in any text made django-lti's sync raise (TypeError,
AttributeError, or PostgreSQL's DataError for its varchar columns): a 500 instead of the readable
refusal page. Each rule below names the claim, its type and the longest text django-lti keeps.

`token_problem` checks the token's envelope first, before PyLTI1p3 reads anything and before the
signature is checked (an unsigned token with a valid login state reaches that far): a header or a
body that is not a JSON object, a nonce, issuer or audience that is not text, a time that is not a
number. Each was a 500 inside PyLTI1p3 or its session code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from infra.nested_data import HAS_NUL, TOO_DEEP, nested_nul_problem

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
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
    DL: {"deep_link_return_url": 2000},
}
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {NRPS: ("context_memberships_url",), DL: ("deep_link_return_url",)}
LIST_FIELDS: dict[str, tuple[str, ...]] = {AGS: ("scope",), LTI + "context": ("type",),
                                           DL: ("accept_types", "accept_presentation_document_targets")}
LIST_CLAIMS = (LTI + "roles", LTI + "role_scope_mentor")
ENVELOPE_TEXTS = {"iss": 255, "nonce": 255, "azp": 255, LTI + "message_type": 100, LTI + "version": 100,
                  LTI + "target_link_uri": 2000}
TIMES = ("exp", "iat", "nbf")


def token_problem(header: Any, body: Any) -> str | None:
    """What is wrong with a decoded id_token's header and body as JSON shapes, or None.

    Checked before the signature: the words may not echo the token's values."""
    if not isinstance(header, dict):
        return "The id_token's header must be a JSON object."
    if not isinstance(header.get("alg"), str):
        return "The id_token's header must name its algorithm (alg) as text."
    if "kid" in header and _text_problem(header["kid"], 255):
        return "The id_token's key id (kid) must be text of at most 255 characters."
    if not isinstance(body, dict):
        return "The id_token's body must be a JSON object."
    for claim, limit in ENVELOPE_TEXTS.items():
        if claim in body and (problem := _text_problem(body[claim], limit)):
            return f"The claim {claim} {problem}."
    audience = body.get("aud", "")
    if not (isinstance(audience, str) or (isinstance(audience, list) and audience
                                          and all(isinstance(item, str) for item in audience))):
        return "The claim aud must be text or a list of texts."
    for claim in TIMES:
        value = body.get(claim, 0)
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value or abs(value) > 1e11:
            return f"The claim {claim} must be a number of seconds."
    return claims_problem(body)


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
        for name in REQUIRED_FIELDS.get(claim, ()):
            if name not in value:
                return f"The claim {claim} must have the field {name}."
        for name, limit in fields.items():
            if name in value and (problem := _text_problem(value[name], limit)):
                return f"The claim {claim} field {name} {problem}."
        for name in LIST_FIELDS.get(claim, ()):
            if name in value and not _texts(value[name]):
                return f"The claim {claim} field {name} must be a list of texts."
    for claim in LIST_CLAIMS:
        value = body.get(claim, [])
        if not _texts(value):
            return f"The claim {claim} must be a list of texts."
    return None


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _text_problem(value: Any, limit: int | None) -> str | None:
    if not isinstance(value, str):
        return "must be text"
    if limit is not None and len(value) > limit:
        return f"is longer than {limit} characters"
    return None
