"""What the test platform signs: launch specs, and how a test may tamper with the id_token."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import jwt
from jwcrypto.jwk import JWK

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
DROP = object()  # an override value that removes the claim


@dataclass
class Member:
    user_id: str
    name: str
    roles: list[str]
    status: str = "Active"


@dataclass
class LaunchSpec:
    """One launch the platform will sign when the tool's auth request names it (lti_message_hint)."""

    user: Member
    context_id: str = "course-1"
    context_title: str = "Autograd 101 (LMS)"
    resource_link_id: str = "link-1"
    custom: dict[str, str] = field(default_factory=dict)
    deep_linking: bool = False
    claims: dict[str, Any] = field(default_factory=dict)  # overrides of the signed body; DROP removes
    header: dict[str, Any] = field(default_factory=dict)  # overrides of the JWT header
    sign_with: str = "platform"  # platform | stranger | hs256 | none
    clock_offset: int = 0  # seconds the platform's clock is ahead
    hint: str = field(default_factory=lambda: uuid.uuid4().hex)


def stranger_key() -> JWK:
    return JWK.generate(kty="RSA", size=2048)


def resign(token: str, *, spec: LaunchSpec, private_pem: str, kid: str, stranger_pem: str) -> str:
    """The platform's signed token, changed as the spec asks and signed again."""
    body = jwt.decode(token, options={"verify_signature": False})
    now = int(time.time()) + spec.clock_offset
    body["iat"], body["exp"] = now, now + 300
    for name, value in spec.claims.items():
        if value is DROP:
            body.pop(name, None)
        else:
            body[name] = value
    header = {"kid": kid, **spec.header}
    if spec.sign_with == "none":
        return jwt.encode(body, None, algorithm="none", headers=header)  # type: ignore[arg-type]
    if spec.sign_with == "hs256":  # the classic confusion: the public key used as an HMAC secret
        return jwt.encode(body, "the-platform-public-key-used-as-a-secret", algorithm="HS256", headers=header)
    key = stranger_pem if spec.sign_with == "stranger" else private_pem
    return jwt.encode(body, key, algorithm="RS256", headers=header)
