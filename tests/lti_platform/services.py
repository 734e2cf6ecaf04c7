"""The platform's LTI Advantage services, as strict as Canvas: tokens, line items, scores, NRPS, deep links."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import jwt
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.registration import Registration

from tests.lti_platform.launches import Member

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
ACTIVITY = {"Initialized", "Started", "InProgress", "Submitted", "Completed"}
GRADING = {"FullyGraded", "Pending", "PendingManual", "Failed", "NotReady"}
MS_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)$")


class Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


class PlatformConfig(LTI1P3PlatformConfAbstract):  # type: ignore[misc]
    def init_platform_config(self, **kwargs: Any) -> None:
        self._registration = kwargs["registration"]

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        return self._registration


@dataclass
class PlatformState:
    """Everything the platform received, for the tests to read."""

    token_url: str
    issuer: str
    client_id: str
    members: dict[str, Member] = field(default_factory=dict)
    course_members: dict[str, set[str]] = field(default_factory=dict)  # LMS course (context id) → user ids
    line_items: dict[str, dict[str, Any]] = field(default_factory=dict)
    scores: list[dict[str, Any]] = field(default_factory=list)
    deep_link_items: list[dict[str, Any]] = field(default_factory=list)
    used_jti: set[str] = field(default_factory=set)
    score_tokens_issued: int = 0
    revoke_scores: dict[str, int] = field(default_factory=dict)  # line item → 401s to answer (a revoked token)
    lock: threading.Lock = field(default_factory=threading.Lock)


def access_token(*, config: PlatformConfig, state: PlatformState, form: dict[str, str]) -> dict[str, Any]:
    """client_credentials with a JWT client assertion, checked as the IMS Security Framework says."""
    assertion = form.get("client_assertion", "")
    if form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
        raise Refused(400, "unsupported client_assertion_type")
    try:
        config.tool_validate_and_decode(assertion)  # signature against the tool's JWKS
        claims = jwt.decode(assertion, options={"verify_signature": False, "require": ["exp", "iat", "jti"]})
        result = config.get_access_token(form)
    except Exception as exc:
        raise Refused(401, f"invalid_client: {exc}") from exc
    if claims.get("iss") != state.client_id or claims.get("sub") != state.client_id:
        raise Refused(401, "invalid_client: iss and sub must be the client id")
    audience = claims.get("aud")
    if state.token_url not in (audience if isinstance(audience, list) else [audience]):
        raise Refused(401, "invalid_client: aud must be the token endpoint")
    if claims["exp"] < time.time():
        raise Refused(401, "invalid_client: assertion expired")
    with state.lock:
        if claims["jti"] in state.used_jti:
            raise Refused(401, "invalid_client: jti reused")
        state.used_jti.add(claims["jti"])
        state.score_tokens_issued += SCORE_SCOPE in form.get("scope", "").split()
    return dict(result)


def authorize(*, config: PlatformConfig, state: PlatformState, header: str, scope: str, line_item: str = "") -> None:
    with state.lock:
        if state.revoke_scores.get(line_item, 0) > 0:
            state.revoke_scores[line_item] -= 1
            raise Refused(401, "token revoked")
    token = header[len("Bearer "):] if header.startswith("Bearer ") else ""
    try:
        allowed = config.validate_token(token, allowed_scopes=[scope])
    except Exception as exc:
        raise Refused(401, f"invalid token: {exc}") from exc
    if not allowed:
        raise Refused(403, f"token lacks scope {scope}")


def line_item_create(*, state: PlatformState, base: str, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get("label"), str) or not body["label"]:
        raise Refused(400, "a line item needs a label")
    maximum = body.get("scoreMaximum")
    if not isinstance(maximum, int | float) or isinstance(maximum, bool) or maximum <= 0:
        raise Refused(400, "scoreMaximum must be a positive number")
    with state.lock:
        item_id = f"{base}/{len(state.line_items) + 1}"
        item = {**body, "id": item_id}
        state.line_items[item_id] = item
    return item


def score_accept(*, state: PlatformState, line_item_id: str, content_type: str, body: Any) -> None:
    if content_type.split(";")[0].strip() != "application/vnd.ims.lis.v1.score+json":
        raise Refused(415, "scores must be application/vnd.ims.lis.v1.score+json")
    if line_item_id not in state.line_items:
        raise Refused(404, "no such line item")
    if not isinstance(body, dict):
        raise Refused(400, "a score is a JSON object")
    if body.get("userId") not in state.members:
        raise Refused(400, f"userId {body.get('userId')!r} is not enrolled")
    if body.get("activityProgress") not in ACTIVITY or body.get("gradingProgress") not in GRADING:
        raise Refused(400, "activityProgress and gradingProgress must be spec values")
    given, maximum = body.get("scoreGiven"), body.get("scoreMaximum")
    if given is not None and (not isinstance(given, int | float) or given < 0 or not isinstance(maximum, int | float)
                              or maximum <= 0):
        raise Refused(400, "scoreGiven needs a non-negative number and a positive scoreMaximum")
    stamp = body.get("timestamp")
    if not isinstance(stamp, str) or not MS_TIMESTAMP.match(stamp):
        raise Refused(400, "timestamp must be ISO 8601 with milliseconds")
    when = datetime.fromisoformat(stamp)
    with state.lock:
        previous = [s for s in state.scores if s["line_item"] == line_item_id and s["userId"] == body["userId"]]
        if previous and datetime.fromisoformat(previous[-1]["timestamp"]) >= when:
            raise Refused(409, "a score with this or a later timestamp was already received")
        state.scores.append({**body, "line_item": line_item_id})


def members_page(*, state: PlatformState, context_id: str, offset: int, limit: int) -> tuple[dict[str, Any], bool]:
    with state.lock:
        enrolled = state.course_members.get(context_id, set())
        people = sorted((m for m in state.members.values() if m.user_id in enrolled), key=lambda m: m.user_id)
    page = people[offset:offset + limit]
    body = {"id": context_id, "context": {"id": context_id},
            "members": [{"user_id": m.user_id, "name": m.name, "roles": m.roles, "status": m.status} for m in page]}
    return body, offset + limit < len(people)


def deep_link_accept(*, config: PlatformConfig, state: PlatformState, form: dict[str, str],
                     deployment_id: str) -> list[dict[str, Any]]:
    token = form.get("JWT", "")
    try:
        items = config.validate_deeplinking_resp({"JWT": token})
        claims = jwt.decode(token, options={"verify_signature": False, "require": ["exp", "iat", "nonce"]})
    except Exception as exc:
        raise Refused(400, f"deep linking response refused: {exc}") from exc
    audience = claims.get("aud")
    if state.issuer not in (audience if isinstance(audience, list) else [audience]) or claims.get("iss") != \
            state.client_id:
        raise Refused(400, "deep linking response: aud must be the platform, iss the client id")
    if claims.get("https://purl.imsglobal.org/spec/lti/claim/deployment_id") != deployment_id:
        raise Refused(400, "deep linking response: wrong deployment")
    for item in items:
        if item.get("type") == "ltiResourceLink" and "lineItem" in item:  # Canvas makes the column at once
            line_item_create(state=state, base=f"{state.issuer}/contexts/course-1/lineitems",
                             body={**item["lineItem"], "resourceLinkId": f"dl-{len(state.deep_link_items)}"})
    with state.lock:
        state.deep_link_items.extend(items)
    return items
