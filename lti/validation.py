"""PyLTI1p3's launch validation with its gaps closed.

- the nonce is single-use, whatever cookies the client sends (`UsedNonce` unique row);
- a platform clock up to LTI_CLOCK_LEEWAY seconds ahead is accepted, no more;
- only RS256 signatures; `exp` and `iat` are required;
- the platform's JWKS is fetched with a timeout and cached (refetched once for an unknown `kid`);
- `target_link_uri` must be this tool's launch URL;
- the token's header and body are JSON objects whose claims have the types and lengths the tool and
  PyLTI1p3 expect (`lti.claim_shapes`), checked as soon as the token is decoded, before the nonce,
  the registration or the signature are looked at;
- a platform's key set is fetched at most once per LTI_JWKS_REFETCH_SECONDS (per key-set URL, in the
  shared cache), so launches naming unknown keys cannot make the tool fetch on every request; what a
  failed fetch says names neither the URL nor the platform's answer.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta
from typing import Any, cast

import jwt
import requests
from django.conf import settings
from django.core.cache import caches
from django.db import IntegrityError, transaction
from django.http import HttpRequest
from django.urls import reverse
from pylti1p3.contrib.django import DjangoCacheDataStorage, DjangoMessageLaunch
from pylti1p3.exception import LtiException
from pylti1p3.message_launch import TKeySet

from infra import clock
from lti.claim_shapes import token_problem
from lti.models import UsedNonce
from lti.tool_config import ToolConfig

log = logging.getLogger(__name__)
ALGORITHMS = ["RS256"]
TARGET_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/target_link_uri"


class TimedSession(requests.Session):
    """Every platform call gets a timeout, so a hung platform never holds a web process."""

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", settings.LTI_HTTP_TIMEOUT)
        return super().request(*args, **kwargs)


class ToolMessageLaunch(DjangoMessageLaunch):
    def __init__(self, request: HttpRequest, **kwargs: Any) -> None:
        super().__init__(request, ToolConfig(), launch_data_storage=launch_storage(), requests_session=TimedSession(),
                         **kwargs)
        self._http_request = request

    def fetch_public_key(self, key_set_url: str) -> TKeySet:
        return platform_jwks(url=key_set_url, session=self._requests_session)

    def get_public_key(self) -> tuple[str, str]:
        if self._jwt.get("header", {}).get("alg") not in ALGORITHMS:
            raise LtiException("The id_token must be signed with RS256.")
        registration = self._registration
        assert registration is not None
        url = str(registration.get_key_set_url())
        if not registration.get_key_set():  # a fetch that fails says so, and is not tried twice
            registration.set_key_set(platform_jwks(url=url, session=self._requests_session))
        try:
            return super().get_public_key()
        except LtiException:  # the platform may have rotated its key since we cached its JWKS (rate-limited)
            registration.set_key_set(platform_jwks(url=url, session=self._requests_session, fresh=True))
            return super().get_public_key()

    def validate_jwt_signature(self) -> ToolMessageLaunch:
        public_key, _alg = self.get_public_key()
        try:
            jwt.decode(self._get_id_token(), public_key, algorithms=ALGORITHMS, leeway=settings.LTI_CLOCK_LEEWAY,
                       options={"verify_aud": False, "require": ["exp", "iat"]})
        except jwt.InvalidTokenError as exc:
            raise LtiException(f"The id_token is not valid: {exc}") from exc
        return self

    def validate_jwt_format(self) -> ToolMessageLaunch:
        super().validate_jwt_format()
        problem = token_problem(self._jwt.get("header"), self._jwt.get("body"))  # PyLTI1p3 assumes the shapes
        if problem:
            raise LtiException(problem)
        return self

    def validate_message(self) -> ToolMessageLaunch:
        super().validate_message()
        target = self._get_jwt_body().get(TARGET_CLAIM)
        if not target_is_ours(request=self._http_request, target=target):
            raise LtiException("target_link_uri does not point to this tool.")
        return self

    def save_launch_data(self) -> ToolMessageLaunch:
        nonce_consume(issuer=self.get_iss(), nonce=str(self._get_jwt_body().get("nonce")))
        super().save_launch_data()
        return self


def launch_storage() -> DjangoCacheDataStorage:
    return DjangoCacheDataStorage(cache_name="lti")


def nonce_consume(*, issuer: str, nonce: str) -> None:
    """Raise LtiException when this nonce was used before (a replayed id_token)."""
    cutoff = clock.now() - timedelta(days=2)  # id_tokens live minutes; older rows only take space
    UsedNonce.objects.filter(used_at__lt=cutoff).delete()
    try:
        with transaction.atomic():
            UsedNonce.objects.create(issuer=issuer, nonce=nonce[:255])
    except IntegrityError as exc:
        raise LtiException("This launch was already used; start it again from the LMS.") from exc


def platform_jwks(*, url: str, session: requests.Session, fresh: bool = False) -> TKeySet:
    """The platform's key set: cached; fetched when not cached or, with `fresh`, when the last fetch of this
    URL is more than LTI_JWKS_REFETCH_SECONDS old. A fetch that failed is not retried within that time."""
    cache = caches["lti"]
    digest = hashlib.sha256(url.encode()).hexdigest()
    key = "jwks-" + digest
    cached = cache.get(key)
    if cached is not None and not fresh:
        return cast(TKeySet, cached)
    if not cache.add("jwks-fetched-" + digest, 1, settings.LTI_JWKS_REFETCH_SECONDS):  # fetched just now
        if cached is not None:
            return cast(TKeySet, cached)
        raise LtiException("The platform's key set could not be fetched a moment ago; try again in a minute.")
    try:
        reply = session.get(url, timeout=settings.LTI_HTTP_TIMEOUT, allow_redirects=False)
        reply.raise_for_status()
        if reply.is_redirect:
            raise requests.HTTPError(f"a redirect to {reply.headers.get('Location')!r}, not followed")
        keys = reply.json()
    except (requests.RequestException, ValueError) as exc:
        log.warning("key set %s could not be fetched: %s", url, exc)
        raise LtiException("The platform's key set could not be fetched; tell the LMS administrator.") from exc
    if not isinstance(keys, dict) or not isinstance(keys.get("keys"), list) \
            or not all(isinstance(item, dict) for item in keys["keys"]):
        log.warning("key set %s is not a JWKS", url)
        raise LtiException("The platform's key set is not a JWKS; tell the LMS administrator.")
    cache.set(key, keys, settings.LTI_JWKS_CACHE_SECONDS)
    return cast(TKeySet, keys)


def target_is_ours(*, request: HttpRequest, target: object) -> bool:
    return isinstance(target, str) and target.split("?")[0] == request.build_absolute_uri(reverse("lti:launch"))
