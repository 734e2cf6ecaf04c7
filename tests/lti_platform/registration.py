"""The platform's side of LTI Dynamic Registration 1.0: its OpenID configuration, its registration endpoint
(which checks the one-time registration token and the tool's configuration), and the page an LMS
administrator sees, framing the tool's registration URL until the tool posts `org.imsglobal.lti.close`."""

from __future__ import annotations

import html
import secrets
from typing import Any
from urllib.parse import urlencode

from tests.lti_platform.services import LINEITEM_SCOPE, NRPS_SCOPE, SCORE_SCOPE, Refused

PLATFORM_CLAIM = "https://purl.imsglobal.org/spec/lti-platform-configuration"
TOOL_CLAIM = "https://purl.imsglobal.org/spec/lti-tool-configuration"
REQUIRED = ("application_type", "grant_types", "response_types", "initiate_login_uri", "redirect_uris",
            "client_name", "jwks_uri", "token_endpoint_auth_method")


# Canvas's issuer is the same for every school, whatever host serves the school's configuration.
CANVAS_ISSUER = "https://canvas.instructure.com"


def openid_configuration(base: str, *, issuer: str | None = None) -> dict[str, Any]:
    return {
        "issuer": issuer or base, "authorization_endpoint": f"{base}/auth", "token_endpoint": f"{base}/token",
        "jwks_uri": f"{base}/jwks", "registration_endpoint": f"{base}/register",
        "token_endpoint_auth_methods_supported": ["private_key_jwt"],
        "token_endpoint_auth_signing_alg_values_supported": ["RS256"],
        "scopes_supported": ["openid", LINEITEM_SCOPE, SCORE_SCOPE, NRPS_SCOPE],
        "response_types_supported": ["id_token"], "subject_types_supported": ["public", "pairwise"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "claims_supported": ["iss", "sub", "name", "given_name", "family_name", "email"],
        PLATFORM_CLAIM: {"product_family_code": "test-lms", "version": "1.0",
                         "messages_supported": [{"type": "LtiResourceLinkRequest"},
                                                {"type": "LtiDeepLinkingRequest"}]},
    }


CANVAS_CONFIGURATION = "/api/lti/security/openid-configuration"


class DynamicRegistrations:
    """Registration tokens the platform issued (each usable once) and the tool configurations it accepted."""

    def __init__(self, *, base: str, client_id: str, deployment_id: str) -> None:
        self.base, self.client_id, self.deployment_id = base, client_id, deployment_id
        self.tokens: set[str] = set()
        self.accepted: list[dict[str, Any]] = []

    def start_url(self, tool_registration_url: str, *, configuration: str = "/.well-known/openid-configuration") -> str:
        """The URL the LMS opens in its frame: the tool's registration URL with the two parameters
        (`configuration`: the path of the OpenID configuration; CANVAS_CONFIGURATION, Canvas's shape)."""
        token = secrets.token_urlsafe(16)
        self.tokens.add(token)
        query = urlencode({"openid_configuration": f"{self.base}{configuration}",
                           "registration_token": token})
        return f"{tool_registration_url}{'&' if '?' in tool_registration_url else '?'}{query}"

    def accept(self, *, authorization: str, body: Any) -> dict[str, Any]:
        token = authorization.removeprefix("Bearer ")
        if token not in self.tokens:
            raise Refused(401, "unknown or used registration token")
        if not isinstance(body, dict) or any(field not in body for field in REQUIRED):
            raise Refused(400, "the tool's configuration lacks required fields")
        tool = body.get(TOOL_CLAIM)
        if not isinstance(tool, dict) or not tool.get("target_link_uri") or not tool.get("domain"):
            raise Refused(400, f"{TOOL_CLAIM} needs domain and target_link_uri")
        self.tokens.discard(token)
        self.accepted.append(body)
        return {**body, "client_id": self.client_id,
                TOOL_CLAIM: {**tool, "deployment_id": self.deployment_id}}


def admin_page(start_url: str) -> str:
    """The LMS administrator's page: the tool's registration in a frame; the tool's close message is recorded."""
    return (f'<!doctype html><title>Register a tool</title><h1>Test LMS: register a tool</h1>'
            f'<p id="closed" hidden>The tool closed the registration.</p>'
            f'<iframe id="tool" src="{html.escape(start_url)}" width="1000" height="600"></iframe>'
            '<script>window.addEventListener("message", (event) => {'
            ' if (event.data && event.data.subject === "org.imsglobal.lti.close") {'
            ' document.getElementById("closed").hidden = false; document.getElementById("tool").remove(); }'
            '});</script>')
