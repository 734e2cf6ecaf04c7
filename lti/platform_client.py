"""Calls to a platform's services: OAuth2 client-credentials tokens (cached), timeouts, one 401 retry.

Every call goes only to a host registered for the platform (`service_hosts_of`: the hosts of its
auth, token and key-set URLs, its frame origins and its `ServiceHost` rows), over HTTPS unless
LTI_ALLOW_HTTP (on with DEBUG), and follows no redirect to another origin. What a failure says is in
the tool's own words (a status and a short reason), never the reply's body: the message is shown to
instructors, and the URL came from a launch claim.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from typing import Any
from urllib.parse import urljoin, urlsplit

import jwt
import requests
from django.conf import settings
from django.core.cache import caches
from jwcrypto.jwk import JWK
from lti_tool.models import LtiRegistration

from infra import clock
from lti.keys import signing_key
from lti.models import FrameOrigin, ServiceHost

log = logging.getLogger(__name__)
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
MAX_REDIRECTS = 3
DEFAULT_PORTS = {"http": 80, "https": 443}
REASONS = {400: "the LMS found the request malformed", 401: "the LMS did not accept the tool's access token",
           403: "the LMS does not allow the tool this service", 404: "the LMS does not know this address",
           405: "the LMS does not offer this service here", 409: "the LMS refused it as a conflict",
           413: "the LMS found the request too large", 415: "the LMS refused the content type",
           422: "the LMS refused the content", 429: "the LMS asks the tool to slow down"}


class PlatformError(Exception):
    """A platform call failed; the message says which and why in the tool's words (shown to instructors)."""


def _reason(status: int) -> str:
    if status in REASONS:
        return REASONS[status]
    if status >= 500:
        return "the LMS had an error of its own"
    if 300 <= status < 400:
        return "a redirect the tool does not follow"
    return "an answer the tool does not expect"


def refused(what: str, status: int) -> PlatformError:
    """The error for a reply with this HTTP status: a status and a short reason, never the reply's body."""
    return PlatformError(f"{what} answered {status}: {_reason(status)}")


def _host_port(url: str) -> tuple[str, int] | None:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return parts.hostname.lower(), port or DEFAULT_PORTS[parts.scheme]


def service_hosts_of(registration: LtiRegistration) -> set[tuple[str, int | None]]:
    """(host, port) pairs the tool may call for this platform; port None: the scheme's default port."""
    urls = [registration.auth_url, registration.token_url, registration.keyset_url,
            *FrameOrigin.objects.filter(registration_id=registration.pk).values_list("origin", flat=True)]
    allowed: set[tuple[str, int | None]] = {pair for url in urls if (pair := _host_port(url))}
    for host in ServiceHost.objects.filter(registration_id=registration.pk).values_list("host", flat=True):
        name, _, port = host.lower().partition(":")
        allowed.add((name, int(port) if port.isdigit() else None))
    return allowed


def url_refusal(*, registration: LtiRegistration, url: str, what: str) -> str | None:
    """Why the tool will not call this URL for this platform, or None when it may."""
    if not registration.is_active:
        return f"{what}: this platform is deactivated on the LMS platforms page; not called"
    parts = urlsplit(url)
    if parts.scheme != "https" and not (parts.scheme == "http" and settings.LTI_ALLOW_HTTP):
        return f"{what}: the LMS gave an address that is not https://, not called"
    pair = _host_port(url)
    if pair is None:
        return f"{what}: the LMS gave an address the tool cannot read, not called"
    host, port = pair
    allowed = service_hosts_of(registration)
    if (host, port) in allowed or ((host, None) in allowed and port == DEFAULT_PORTS[parts.scheme]):
        return None
    return (f"{what}: the LMS gave an address at {host} (port {port}), which is not a host registered for this "
            f"platform; not called (an administrator can add it with lti_register --service-host)")


def _origin(url: str) -> tuple[str, str, int] | None:
    pair = _host_port(url)
    return None if pair is None else (urlsplit(url).scheme, *pair)


def guarded_request(method: str, url: str, *, what: str, **kwargs: Any) -> requests.Response:
    """One HTTP request with the tool's timeout that follows redirects only within the same origin
    (scheme, host and port), at most MAX_REDIRECTS; raises PlatformError in the tool's words."""
    kwargs.setdefault("timeout", settings.LTI_HTTP_TIMEOUT)
    for _ in range(MAX_REDIRECTS + 1):
        try:
            reply = requests.request(method, url, allow_redirects=False, **kwargs)
        except requests.Timeout as exc:
            raise PlatformError(f"{what}: the LMS did not answer within {settings.LTI_HTTP_TIMEOUT:g} s") from exc
        except requests.RequestException as exc:
            log.warning("%s %s failed: %s", method, url, exc)
            raise PlatformError(f"{what}: the LMS could not be reached") from exc
        if not reply.is_redirect:
            return reply
        target = urljoin(url, reply.headers.get("Location", ""))
        if _origin(target) != _origin(url) or not (reply.status_code in (307, 308) or method in ("GET", "HEAD")):
            log.warning("%s %s redirected to %s: not followed", method, url, target)
            raise PlatformError(f"{what} answered {reply.status_code}: a redirect to another address, not followed")
        url = target
    raise PlatformError(f"{what}: more than {MAX_REDIRECTS} redirects, not followed")


def reply_json(reply: requests.Response, *, what: str) -> Any:
    try:
        return reply.json()
    except ValueError as exc:
        raise PlatformError(f"{what}: the LMS's answer is not JSON") from exc


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
    what = "the LMS's token service"
    if problem := url_refusal(registration=registration, url=registration.token_url, what=what):
        raise PlatformError(problem)
    data = {"grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": _client_assertion(registration=registration), "scope": " ".join(scopes)}
    reply = guarded_request("POST", registration.token_url, what=what, data=data)
    if reply.status_code != 200:
        raise refused(what, reply.status_code)
    body = reply_json(reply, what=what)
    token = body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        raise PlatformError(f"{what}: its answer has no access token")
    lifetime = body.get("expires_in", 3600)
    lifetime = int(lifetime) if isinstance(lifetime, int | float) and not isinstance(lifetime, bool) else 3600
    cache.set(cache_key, token, min(max(lifetime - 60, 1), 86_400))  # refreshed a minute before it expires
    return token


def platform_call(*, registration: LtiRegistration, method: str, url: str, scopes: list[str], what: str,
                  **kwargs: Any) -> requests.Response:
    """One service call to a registered host; a 401 (token revoked or expired early) gets one retry with a
    new token. `what` names the service in the messages ("the LMS's score service")."""
    if problem := url_refusal(registration=registration, url=url, what=what):
        raise PlatformError(problem)
    extra_headers = kwargs.pop("headers", {})
    for fresh in (False, True):
        token = access_token(registration=registration, scopes=scopes, fresh=fresh)
        reply = guarded_request(method, url, what=what,
                                headers={**extra_headers, "Authorization": f"Bearer {token}"}, **kwargs)
        if reply.status_code != 401:
            break
    if reply.status_code >= 300:
        raise refused(what, reply.status_code)
    return reply
