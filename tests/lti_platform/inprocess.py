"""The test platform's launches in the test process: a registered platform whose key set is already in the
tool's cache, launches signed with its key (or with any header and body, JSON objects or not) and posted
through Django's test client after a real OIDC login. No servers, so property-based tests can run many.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.core.cache import caches
from django.test import Client
from jwcrypto.jwk import JWK
from lti_tool.models import LtiDeployment

from lti.registration import RegistrationSpec, registration_upsert
from tests.lti_platform.launches import INSTRUCTOR, LEARNER, sign_raw

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
LAUNCH_URL = "http://testserver/lti/launch/"
_KEY = JWK.generate(kty="RSA", size=2048)  # one key for the session: generating one takes a while


@dataclass
class Platform:
    """A platform registered with the tool; its endpoints need not answer (its key set is pre-cached)."""

    base: str = field(default_factory=lambda: f"https://lms-{uuid.uuid4().hex[:8]}.example")
    client_id: str = field(default_factory=lambda: f"client-{uuid.uuid4().hex[:8]}")
    deployment_id: str = "deployment-1"
    kid: str = field(default_factory=lambda: _KEY.thumbprint())

    @property
    def private_pem(self) -> str:
        return _KEY.export_to_pem(private_key=True, password=None).decode()

    def register(self, *, course: str = "", contexts: tuple[str, ...] = (), token_url: str = "",
                 service_hosts: tuple[str, ...] = ()) -> Platform:
        registration_upsert(spec=RegistrationSpec(
            name="In-process LMS", issuer=self.base, client_id=self.client_id, auth_url=f"{self.base}/auth",
            token_url=token_url or f"{self.base}/token", keyset_url=f"{self.base}/jwks",
            deployment_id=self.deployment_id, course_slug=course, context_ids=contexts,
            service_hosts=service_hosts))
        jwks = {"keys": [{**_KEY.export_public(as_dict=True), "kid": self.kid, "alg": "RS256", "use": "sig"}]}
        digest = hashlib.sha256(f"{self.base}/jwks".encode()).hexdigest()
        caches["lti"].set("jwks-" + digest, jwks, settings.LTI_JWKS_CACHE_SECONDS)
        return self

    @property
    def deployment(self) -> LtiDeployment:
        return LtiDeployment.objects.get(registration__issuer=self.base, deployment_id=self.deployment_id)

    def login(self, client: Client, *, user_id: str = "u-1") -> tuple[str, str]:
        """A real OIDC login at the tool: (state, nonce) of the auth request it redirects to."""
        reply = client.get("/lti/login/", {"iss": self.base, "login_hint": user_id, "lti_message_hint": "m",
                                            "target_link_uri": LAUNCH_URL, "client_id": self.client_id,
                                            "lti_cookies_checked": "1"})
        assert reply.status_code == 302, reply.content[:300]
        query = parse_qs(urlsplit(reply["Location"]).query)
        return query["state"][0], query["nonce"][0]

    def body(self, *, nonce: str, user_id: str = "u-1", roles: tuple[str, ...] = (LEARNER,),
             context_id: str = "ctx-1", label: str = "AG101", title: str = "Autograd 101 (LMS)",
             resource_link_id: str = "link-1", custom: dict[str, Any] | None = None,
             line_item: str = "", memberships_url: str = "") -> dict[str, Any]:
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": self.base, "aud": self.client_id, "sub": user_id, "nonce": nonce, "iat": now, "exp": now + 300,
            "name": f"Person {user_id}",
            CLAIM + "deployment_id": self.deployment_id, CLAIM + "message_type": "LtiResourceLinkRequest",
            CLAIM + "version": "1.3.0", CLAIM + "roles": list(roles), CLAIM + "target_link_uri": LAUNCH_URL,
            CLAIM + "context": {"id": context_id, "label": label, "title": title},
            CLAIM + "resource_link": {"id": resource_link_id, "title": "Graded link"},
            CLAIM + "custom": custom if custom is not None else {},
        }
        if line_item:
            body[AGS] = {"scope": ["https://purl.imsglobal.org/spec/lti-ags/scope/score"], "lineitem": line_item,
                         "lineitems": line_item.rsplit("/", 1)[0]}
        if memberships_url:
            body[NRPS] = {"context_memberships_url": memberships_url, "service_versions": ["2.0"]}
        return body

    def header(self) -> dict[str, Any]:
        return {"alg": "RS256", "typ": "JWT", "kid": self.kid}

    def post(self, client: Client, *, state: str, header: Any, body: Any, signed: bool = True) -> Any:
        token = sign_raw(header, body, private_pem=self.private_pem)
        if not signed:
            token = token.rsplit(".", 1)[0] + ".bm90LWEtc2lnbmF0dXJl"
        return client.post("/lti/launch/", {"id_token": token, "state": state})

    def launch(self, *, client: Client | None = None, user_id: str = "u-1", instructor: bool = False,
               **body_args: Any) -> Any:
        """A good launch of this user (a learner unless `instructor`), in a fresh browser unless given one."""
        client = client or Client()
        state, nonce = self.login(client, user_id=user_id)
        roles = (INSTRUCTOR,) if instructor else (LEARNER,)
        return self.post(client, state=state, header=self.header(),
                         body=self.body(nonce=nonce, user_id=user_id, roles=roles, **body_args))
