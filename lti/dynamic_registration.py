"""LTI Dynamic Registration 1.0, the tool's side: read the platform's OpenID configuration, post the tool's
registration, store the platform INACTIVE until an operator activates it on the platforms page.

The registration URL an LMS administrator pastes into the LMS is issued by an operator (signed, valid for
LTI_REGISTRATION_URL_DAYS) and registers one platform, so no anonymous visitor can make the tool fetch URLs
and a URL seen by someone else after its use registers nothing. Outbound calls follow the
platform rules of `lti.platform_client`: https:// unless LTI_ALLOW_HTTP, the tool's timeout, no redirect to
another origin, at most MAX_BYTES read, and errors in the tool's own words.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import secrets
import socket
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.db import IntegrityError, transaction
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from lti_tool.models import LtiRegistration

from lti.framing import origin_of
from lti.models import UsedRegistrationUrl
from lti.platform_client import LINEITEM_SCOPE, NRPS_SCOPE, SCORE_SCOPE, PlatformError, guarded_request, refused
from lti.registration import RegistrationError, RegistrationSpec, registration_upsert

PLATFORM_CLAIM = "https://purl.imsglobal.org/spec/lti-platform-configuration"
TOOL_CLAIM = "https://purl.imsglobal.org/spec/lti-tool-configuration"
RESULT_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
SALT = "lti.dynamic-registration"
MAX_BYTES = 64 * 1024
TITLE = "Autograd grader"
STALE_CLAIM = timedelta(minutes=5)  # a registration takes seconds (two calls within LTI_HTTP_TIMEOUT each)
# Canvas gives every instance Instructure hosts (and, unless configured otherwise, self-hosted ones)
# one fixed issuer, whatever the school's domain its OpenID configuration is served from (Canvas's
# LTI launch documentation): its issuer can never be on that host.
SHARED_ISSUERS = frozenset({"https://canvas.instructure.com", "https://canvas.beta.instructure.com",
                            "https://canvas.test.instructure.com"})


class RegistrationRefused(Exception):
    """Dynamic registration could not finish; the message says why in the tool's words."""


def registration_url(request: HttpRequest) -> str:
    """A registration URL for LMS administrators, issued by the operator viewing the page."""
    # The random part makes each URL its own, even two issued in the same second: one is used up alone.
    token = signing.dumps({"by": request.user.pk, "n": secrets.token_urlsafe(8)}, salt=SALT, compress=True)
    return request.build_absolute_uri(reverse("lti:register", args=[token]))


def registration_url_valid(token: str) -> bool:
    """Signed by this server, younger than LTI_REGISTRATION_URL_DAYS, and its issuer still an operator."""
    try:
        issued = signing.loads(token, salt=SALT, max_age=settings.LTI_REGISTRATION_URL_DAYS * 86_400)
    except signing.BadSignature:
        return False
    by = issued.get("by") if isinstance(issued, dict) else None
    return isinstance(by, int) and get_user_model().objects.filter(pk=by, is_staff=True, is_active=True).exists()


class RegistrationUrlTaken(Exception):
    """The URL has registered its platform, or a registration with it is under way; the message says which."""


def claim_registration_url(token: str) -> UsedRegistrationUrl:
    """Claim a valid URL for one registration, or raise RegistrationUrlTaken. `give_back` a claim whose
    registration failed; a claim left by a run that never finished is taken over after STALE_CLAIM."""
    digest = hashlib.sha256(token.encode()).hexdigest()
    now = timezone.now()
    try:
        with transaction.atomic():  # a refused insert must not spoil a surrounding transaction
            return UsedRegistrationUrl.objects.create(digest=digest, used_at=now)
    except IntegrityError:
        pass
    if UsedRegistrationUrl.objects.filter(digest=digest, registered=False, used_at__lt=now - STALE_CLAIM).update(
            used_at=now):
        return UsedRegistrationUrl.objects.get(digest=digest)
    if UsedRegistrationUrl.objects.filter(digest=digest, registered=True).exists():
        raise RegistrationUrlTaken("This registration URL has been used already: each URL registers one platform. "
                                   "Ask the grader's operator for a new one (on the LMS platforms page).")
    raise RegistrationUrlTaken("A registration with this URL is under way (or was cut off moments ago): try "
                               "again in a few minutes, or ask the grader's operator for a new URL.")


def give_back(claim: UsedRegistrationUrl) -> None:
    UsedRegistrationUrl.objects.filter(pk=claim.pk, registered=False).delete()


def registered_with(claim: UsedRegistrationUrl, registration: LtiRegistration) -> None:
    UsedRegistrationUrl.objects.filter(pk=claim.pk).update(registered=True, registration=registration)


@dataclass(frozen=True)
class PlatformConfiguration:
    issuer: str
    auth_url: str
    token_url: str
    keyset_url: str
    registration_endpoint: str
    name: str
    audience: str
    scopes: frozenset[str]
    served_from: str  # the origin that served the configuration: a shared issuer's school host


def _url_problem(url: object) -> str | None:
    if not isinstance(url, str) or len(url) > 1000 or origin_of(url) is None:
        return "is not an http(s) URL"
    if urlsplit(url).scheme != "https" and not settings.LTI_ALLOW_HTTP:
        return "is not https://"
    return None


def _inside_address(url: str) -> bool:
    """Whether the URL's host resolves to a loopback, private, link-local or otherwise internal address:
    a registration URL's holder must not make the tool call inside the school's network. (Checked before
    the request; with LTI_ALLOW_HTTP, for tests and development, it is not.)"""
    host = urlsplit(url).hostname or ""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return True  # unresolvable: nothing to call
    return any(not ipaddress.ip_address(str(address).split("%")[0]).is_global for address in addresses)


def _json_from(method: str, url: str, *, what: str, **kwargs: Any) -> Any:
    """The JSON a platform answers, read within one deadline (a server that drips its answer byte by byte
    holds a web process no longer than LTI_HTTP_TIMEOUT) and at most MAX_BYTES."""
    if not settings.LTI_ALLOW_HTTP and _inside_address(url):
        raise PlatformError(f"{what}: its address is inside this network, not called")
    reply = guarded_request(method, url, what=what, stream=True, **kwargs)
    deadline = time.monotonic() + settings.LTI_HTTP_TIMEOUT
    try:
        if reply.status_code >= 300:
            raise refused(what, reply.status_code)
        body = b""
        while chunk := reply.raw.read1(8192, decode_content=True):  # what has arrived, not a full chunk
            body += chunk
            if len(body) > MAX_BYTES:
                raise PlatformError(f"{what}: the answer is larger than {MAX_BYTES // 1024} KB, not read")
            if time.monotonic() > deadline:
                raise PlatformError(f"{what}: the LMS did not finish answering within "
                                    f"{settings.LTI_HTTP_TIMEOUT:g} s")
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
        raise PlatformError(f"{what}: the LMS's answer broke off") from exc
    finally:
        reply.close()
    try:
        return json.loads(body)
    except ValueError as exc:
        raise PlatformError(f"{what}: the answer is not JSON") from exc


def platform_configuration(url: str) -> PlatformConfiguration:
    """The platform's OpenID configuration, checked: its issuer on the configuration URL's host, every
    endpoint an http(s) URL (https:// in production)."""
    what = "the LMS's OpenID configuration"
    if problem := _url_problem(url):
        raise RegistrationRefused(f"openid_configuration {problem}.")
    body = _json_from("GET", url, what=what)
    if not isinstance(body, dict):
        raise RegistrationRefused(f"{what} is not a JSON object.")
    fields = {"issuer": "issuer", "authorization_endpoint": "auth_url", "token_endpoint": "token_url",
              "jwks_uri": "keyset_url", "registration_endpoint": "registration_endpoint"}
    for field in fields:
        if problem := _url_problem(body.get(field)):
            raise RegistrationRefused(f"{what}: {field} {problem}.")
    if urlsplit(body["issuer"]).hostname != urlsplit(url).hostname and body["issuer"].rstrip("/") not in SHARED_ISSUERS:
        raise RegistrationRefused(f"{what}: its issuer is not on the host of the configuration's URL.")
    product = body.get(PLATFORM_CLAIM)
    product = product if isinstance(product, dict) else {}
    name = product.get("product_family_code") if isinstance(product.get("product_family_code"), str) else ""
    scopes = body.get("scopes_supported")
    audience = body.get("authorization_server")
    return PlatformConfiguration(
        **{mine: body[theirs] for theirs, mine in fields.items()},
        name=f"{name or 'LMS'} at {urlsplit(url).hostname}"[:255], served_from=origin_of(url) or "",
        audience=audience[:255] if isinstance(audience, str) else "",
        scopes=frozenset(s for s in scopes if isinstance(s, str)) if isinstance(scopes, list) else frozenset())


def tool_configuration(request: HttpRequest, *, platform_scopes: frozenset[str]) -> dict[str, Any]:
    """What the tool asks the platform to register (the client metadata with the LTI tool claim)."""
    urls = {name: request.build_absolute_uri(reverse(f"lti:{name}")) for name in ("login", "launch", "jwks")}
    scopes = [LINEITEM_SCOPE, RESULT_SCOPE, SCORE_SCOPE, NRPS_SCOPE]
    return {
        "application_type": "web", "response_types": ["id_token"], "grant_types": ["implicit", "client_credentials"],
        "initiate_login_uri": urls["login"], "redirect_uris": [urls["launch"]], "client_name": TITLE,
        "jwks_uri": urls["jwks"], "token_endpoint_auth_method": "private_key_jwt",
        "scope": " ".join(s for s in scopes if not platform_scopes or s in platform_scopes),
        TOOL_CLAIM: {
            "domain": request.get_host(), "target_link_uri": urls["launch"],
            "claims": ["iss", "sub", "name", "given_name", "family_name", "email"],
            "messages": [{"type": "LtiDeepLinkingRequest", "target_link_uri": urls["launch"], "label": TITLE}],
        },
    }


def dynamic_register(*, request: HttpRequest, config_url: str, registration_token: str) -> LtiRegistration:
    """Read the platform's configuration, post the tool's, store the platform inactive."""
    config = platform_configuration(config_url)
    what = "the LMS's registration service"
    headers = {"Authorization": f"Bearer {registration_token}"} if registration_token else {}
    body = _json_from("POST", config.registration_endpoint, what=what, headers=headers,
                      json=tool_configuration(request, platform_scopes=config.scopes))
    client_id = body.get("client_id") if isinstance(body, dict) else None
    if not isinstance(client_id, str) or not 0 < len(client_id) <= 255:
        raise RegistrationRefused(f"{what} answered without a client_id.")
    if LtiRegistration.objects.filter(issuer=config.issuer, client_id=client_id).exists():
        raise RegistrationRefused("This LMS and client ID are registered already: the grader's operator edits "
                                  "them on the LMS platforms page.")
    tool = body.get(TOOL_CLAIM)
    deployment_id = tool.get("deployment_id") if isinstance(tool, dict) else None
    spec = RegistrationSpec(name=config.name, issuer=config.issuer, client_id=client_id, auth_url=config.auth_url,
                            token_url=config.token_url, keyset_url=config.keyset_url,
                            deployment_id=deployment_id if isinstance(deployment_id, str) else "", active=False,
                            frame_origins=_school_origin(config))
    try:
        registration, _ = registration_upsert(spec=spec)
    except RegistrationError as exc:
        raise RegistrationRefused(f"the LMS's answer cannot be stored: {exc.field} {exc.message}") from exc
    if config.audience:
        LtiRegistration.objects.filter(pk=registration.pk).update(audience=config.audience)
    return registration


def _school_origin(config: PlatformConfiguration) -> tuple[str, ...]:
    """Under a shared issuer the school's own host frames the tool and serves grades and rosters: the
    origin that served the configuration is kept as the platform's frame origin (the operator sees it
    on the platforms page before activating)."""
    if urlsplit(config.issuer).hostname == urlsplit(config.served_from).hostname or not config.served_from:
        return ()
    return (config.served_from,)
