"""Registrations written by `lti_register` (and read back by the admin): one per (issuer, client id)."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from lti_tool.models import LtiDeployment, LtiRegistration

from assignments.models import Course
from lti.framing import origin_of, platform_origins_forget
from lti.keys import signing_key
from lti.models import DeploymentCourse, FrameOrigin


@dataclass(frozen=True)
class RegistrationSpec:
    name: str
    issuer: str
    client_id: str
    auth_url: str
    token_url: str
    keyset_url: str
    deployment_id: str
    course_slug: str = ""
    frame_origins: tuple[str, ...] = ()


def _checked(spec: RegistrationSpec) -> Course | None:
    for field in ("auth_url", "token_url", "keyset_url"):
        try:
            URLValidator(schemes=["http", "https"])(getattr(spec, field))
        except ValidationError as exc:
            raise ValueError(f"--{field.replace('_', '-')} is not a URL: {getattr(spec, field)!r}") from exc
    for origin in spec.frame_origins:
        if origin_of(origin) != origin.rstrip("/"):
            raise ValueError(f"--frame-origin must be scheme://host[:port], not {origin!r}")
    if not spec.course_slug:
        return None
    course = Course.objects.filter(slug=spec.course_slug).first()
    if course is None:
        raise ValueError(f"no course with slug {spec.course_slug!r}")
    return course


@transaction.atomic
def registration_upsert(*, spec: RegistrationSpec) -> tuple[LtiRegistration, bool]:
    course = _checked(spec)
    registration, created = LtiRegistration.objects.update_or_create(
        issuer=spec.issuer, client_id=spec.client_id,
        defaults={"name": spec.name, "auth_url": spec.auth_url, "token_url": spec.token_url,
                  "keyset_url": spec.keyset_url, "is_active": True},
    )
    deployment, _ = LtiDeployment.objects.update_or_create(
        registration=registration, deployment_id=spec.deployment_id, defaults={"is_active": True})
    if course is not None:
        DeploymentCourse.objects.update_or_create(deployment=deployment, defaults={"course": course})
    for origin in spec.frame_origins:
        FrameOrigin.objects.get_or_create(registration=registration, origin=origin.rstrip("/"))
    signing_key()  # a key to publish before the platform first fetches the JWKS
    transaction.on_commit(platform_origins_forget)
    return registration, created
