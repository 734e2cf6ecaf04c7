"""Calls to a platform's services: OAuth2 client-credentials tokens (cached), timeouts, one 401 retry."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import jwt
import requests
from django.conf import settings
from django.core.cache import caches
from jwcrypto.jwk import JWK
from lti_tool.models import LtiRegistration

from infra import clock
from lti.keys import signing_key

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"


class PlatformError(Exception):
    """A platform call failed; the message says which and why (shown to instructors)."""


def _client_assertion(*, registration: LtiRegistration) -> str:
    key = signing_key()
    now = int(clock.now().timestamp())
    claims = {"iss": registration.client_id, "sub": registration.client_id,
              "aud": registration.audience or registration.token_url, "iat": now, "exp": now + 300,
              "jti": uuid.uuid4().hex}
    kid = JWK.from_pem(key.public_key.encode()).thumbprint()
    return jwt.encode(claims, key.private_key, algorithm="RS256", headers={"kid": kid})


def access_token(*, registration: LtiRegistration, scopes: list[str], fresh: bool = False) -> str:
    cache = caches["lti"]
    owner = f"{registration.issuer}|{registration.client_id}|{registration.token_url}"  # not the pk: Redis is shared
    cache_key = "token-" + hashlib.sha256(f"{owner}|{' '.join(sorted(scopes))}".encode()).hexdigest()
    if not fresh and (token := cache.get(cache_key)):
        return str(token)
    data = {"grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": _client_assertion(registration=registration), "scope": " ".join(scopes)}
    try:
        reply = requests.post(registration.token_url, data=data, timeout=settings.LTI_HTTP_TIMEOUT)
    except requests.RequestException as exc:
        raise PlatformError(f"token request to {registration.token_url} failed: {exc}") from exc
    if reply.status_code != 200:
        raise PlatformError(f"token request refused ({reply.status_code}): {reply.text[:300]}")
    body = reply.json()
    token = body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str):
        raise PlatformError("the token reply has no access_token")
    lifetime = int(body.get("expires_in", 3600))
    cache.set(cache_key, token, max(lifetime - 60, 1))  # refreshed a minute before the platform expires it
    return token


def platform_call(*, registration: LtiRegistration, method: str, url: str, scopes: list[str],
                  **kwargs: Any) -> requests.Response:
    """One service call; a 401 (token revoked or expired early) gets one retry with a new token."""
    for fresh in (False, True):
        headers = {**kwargs.pop("headers", {}),
                   "Authorization": f"Bearer {access_token(registration=registration, scopes=scopes, fresh=fresh)}"}
        kwargs["headers"] = headers
        try:
            reply = requests.request(method, url, timeout=settings.LTI_HTTP_TIMEOUT, **kwargs)
        except requests.RequestException as exc:
            raise PlatformError(f"{method} {url} failed: {exc}") from exc
        if reply.status_code != 401:
            break
    if reply.status_code >= 400:
        raise PlatformError(f"{method} {url} answered {reply.status_code}: {reply.text[:300]}")
    return reply
