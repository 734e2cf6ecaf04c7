"""Registrations written by `lti_register` (and read back by the admin): one per (issuer, client id)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from lti_tool.models import LtiContext, LtiDeployment, LtiRegistration

from assignments.models import Course
from lti.framing import origin_of, platform_origins_forget
from lti.keys import signing_key
from lti.models import ContextCourse, FrameOrigin, ServiceHost

HOST = re.compile(r"[a-z0-9.-]{1,253}(:[0-9]{1,5})?")


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
    context_ids: tuple[str, ...] = ()  # the LMS courses (context ids) that use `course_slug`
    frame_origins: tuple[str, ...] = ()
    service_hosts: tuple[str, ...] = ()


def _checked(spec: RegistrationSpec) -> Course | None:
    for field in ("auth_url", "token_url", "keyset_url"):
        try:
            URLValidator(schemes=["http", "https"])(getattr(spec, field))
        except ValidationError as exc:
            raise ValueError(f"--{field.replace('_', '-')} is not a URL: {getattr(spec, field)!r}") from exc
    for origin in spec.frame_origins:
        if origin_of(origin) != origin.rstrip("/"):
            raise ValueError(f"--frame-origin must be scheme://host[:port], not {origin!r}")
    for host in spec.service_hosts:
        if not HOST.fullmatch(host.lower()):
            raise ValueError(f"--service-host must be host or host:port, not {host!r}")
    if any(not cid or len(cid) > 255 for cid in spec.context_ids):
        raise ValueError("--context must be an LMS course id (its context id) of 1 to 255 characters")
    if spec.context_ids and not spec.course_slug:
        raise ValueError("--context needs --course: the grader course those LMS courses use")
    if not spec.course_slug:
        return None
    course = Course.objects.filter(slug=spec.course_slug).first()
    if course is None:
        raise ValueError(f"no course with slug {spec.course_slug!r}")
    if not spec.context_ids:
        raise ValueError("--course needs --context ID (repeatable): the LMS courses (context ids) that use it; "
                         "every other LMS course gets a course of its own on its first launch")
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
        for context_id in spec.context_ids:  # the mapping a launch of exactly these LMS courses finds
            context, _ = LtiContext.objects.get_or_create(deployment=deployment, id_on_platform=context_id)
            ContextCourse.objects.update_or_create(context=context, defaults={"course": course})
    for origin in spec.frame_origins:
        FrameOrigin.objects.get_or_create(registration=registration, origin=origin.rstrip("/"))
    for host in spec.service_hosts:
        ServiceHost.objects.get_or_create(registration=registration, host=host.lower())
    signing_key()  # a key to publish before the platform first fetches the JWKS
    transaction.on_commit(platform_origins_forget)
    return registration, created
