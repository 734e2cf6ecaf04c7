"""What the test platform signs: launch specs, and how a test may tamper with the id_token."""

from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import jwt
from jwcrypto.jwk import JWK
from jwt.algorithms import RSAAlgorithm

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
DROP = object()  # an override value that removes the claim
KEEP = object()  # the header or body as the platform made them


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
    whole_header: Any = KEEP  # any JSON value (a list, a string …) in place of the header, signed as is
    whole_body: Any = KEEP  # likewise the body
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
    if spec.whole_header is not KEEP or spec.whole_body is not KEEP:
        return sign_raw({"alg": "RS256", "typ": "JWT", **header} if spec.whole_header is KEEP else spec.whole_header,
                        body if spec.whole_body is KEEP else spec.whole_body, private_pem=private_pem)
    if spec.sign_with == "none":
        return jwt.encode(body, None, algorithm="none", headers=header)  # type: ignore[arg-type]
    if spec.sign_with == "hs256":  # the classic confusion: the public key used as an HMAC secret
        return jwt.encode(body, "the-platform-public-key-used-as-a-secret", algorithm="HS256", headers=header)
    key = stranger_pem if spec.sign_with == "stranger" else private_pem
    return jwt.encode(body, key, algorithm="RS256", headers=header)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign_raw(header: Any, body: Any, *, private_pem: str) -> str:
    """An RS256 JWS over any JSON header and body (a list, a string …), which PyJWT refuses to make."""
    head = _b64(json.dumps(header).encode())
    payload = _b64(json.dumps(body).encode())
    algorithm = RSAAlgorithm(RSAAlgorithm.SHA256)
    signature = algorithm.sign(f"{head}.{payload}".encode(), algorithm.prepare_key(private_pem))
    return f"{head}.{payload}.{_b64(signature)}"
