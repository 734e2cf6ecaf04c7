"""Registrations written by `lti_register`, the operators' platforms page and dynamic registration: one per
(issuer, client id). The command and the page share `registration_upsert`; the page also edits a row in place."""

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
    deployment_id: str  # "" on an edit that adds no deployment
    course_slug: str = ""
    context_ids: tuple[str, ...] = ()  # the LMS courses (context ids) that use `course_slug`
    frame_origins: tuple[str, ...] = ()
    service_hosts: tuple[str, ...] = ()
    active: bool = True  # False: stored for an operator to activate (dynamic registration)


class RegistrationError(ValueError):
    """A value the registration refuses; `field` names it (the command's option, the page's field)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"--{field.replace('_', '-')}: {message}")
        self.field, self.message = field, message


def _checked(spec: RegistrationSpec) -> Course | None:
    if not spec.name.strip() or len(spec.name) > 255:
        raise RegistrationError("name", "give a name of 1 to 255 characters")
    for field in ("issuer", "client_id", "deployment_id"):
        value = getattr(spec, field)
        if len(value) > 255 or (field != "deployment_id" and not value.strip()):
            raise RegistrationError(field, "give 1 to 255 characters")
    if origin_of(spec.issuer) is None:
        raise RegistrationError("issuer", f"must be an http(s) URL, not {spec.issuer!r}")
    for field in ("auth_url", "token_url", "keyset_url"):
        try:
            URLValidator(schemes=["http", "https"])(getattr(spec, field))
        except ValidationError as exc:
            raise RegistrationError(field, f"is not a URL: {getattr(spec, field)!r}") from exc
    for origin in spec.frame_origins:
        if origin_of(origin) != origin.rstrip("/"):
            raise RegistrationError("frame_origin", f"must be scheme://host[:port], not {origin!r}")
    for host in spec.service_hosts:
        if not HOST.fullmatch(host.lower()):
            raise RegistrationError("service_host", f"must be host or host:port, not {host!r}")
    return _course_checked(spec)


def _course_checked(spec: RegistrationSpec) -> Course | None:
    if any(not cid or len(cid) > 255 for cid in spec.context_ids):
        raise RegistrationError("context", "an LMS course id (its context id) has 1 to 255 characters")
    if spec.context_ids and not spec.course_slug:
        raise RegistrationError("context", "needs --course: the grader course those LMS courses use")
    if not spec.course_slug:
        return None
    course = Course.objects.filter(slug=spec.course_slug).first()
    if course is None:
        raise RegistrationError("course", f"no course with slug {spec.course_slug!r}")
    if not spec.context_ids:
        raise RegistrationError("context", "--course needs --context ID (repeatable): the LMS courses (context "
                                "ids) that use it; every other LMS course gets a course of its own on its first launch")
    if not spec.deployment_id:
        raise RegistrationError("deployment", "--course needs --deployment: the deployment those LMS courses use")
    return course


@transaction.atomic
def registration_upsert(*, spec: RegistrationSpec) -> tuple[LtiRegistration, bool]:
    """Create or update the registration of (issuer, client id); origins, hosts and bindings are added to."""
    course = _checked(spec)
    registration, created = LtiRegistration.objects.update_or_create(
        issuer=spec.issuer, client_id=spec.client_id,
        defaults={"name": spec.name, "auth_url": spec.auth_url, "token_url": spec.token_url,
                  "keyset_url": spec.keyset_url, "is_active": spec.active},
    )
    _attach(registration=registration, spec=spec, course=course)
    return registration, created


@transaction.atomic
def registration_edit(*, registration: LtiRegistration, spec: RegistrationSpec) -> LtiRegistration:
    """Change this row in place (the operators' page): its active state stays, its frame origins and
    service hosts become the spec's; a deployment and context bindings in the spec are added."""
    course = _checked(spec)
    clash = LtiRegistration.objects.filter(issuer=spec.issuer, client_id=spec.client_id).exclude(pk=registration.pk)
    if clash.exists():
        raise RegistrationError("client_id", "another registration has this issuer and client id")
    for field in ("name", "issuer", "client_id", "auth_url", "token_url", "keyset_url"):
        setattr(registration, field, getattr(spec, field))
    registration.save()
    FrameOrigin.objects.filter(registration=registration).exclude(
        origin__in=[o.rstrip("/") for o in spec.frame_origins]).delete()
    ServiceHost.objects.filter(registration=registration).exclude(
        host__in=[h.lower() for h in spec.service_hosts]).delete()
    _attach(registration=registration, spec=spec, course=course)
    return registration


def _attach(*, registration: LtiRegistration, spec: RegistrationSpec, course: Course | None) -> None:
    if spec.deployment_id:
        deployment, _ = LtiDeployment.objects.update_or_create(
            registration=registration, deployment_id=spec.deployment_id, defaults={"is_active": True})
        for context_id in spec.context_ids if course is not None else ():  # what a launch of these LMS courses finds
            context, _ = LtiContext.objects.get_or_create(deployment=deployment, id_on_platform=context_id)
            ContextCourse.objects.update_or_create(context=context, defaults={"course": course})
    for origin in spec.frame_origins:
        FrameOrigin.objects.get_or_create(registration=registration, origin=origin.rstrip("/"))
    for host in spec.service_hosts:
        ServiceHost.objects.get_or_create(registration=registration, host=host.lower())
    signing_key()  # a key to publish before the platform first fetches the JWKS
    transaction.on_commit(platform_origins_forget)


def active_set(*, registration: LtiRegistration, deployment: LtiDeployment | None = None, active: bool) -> None:
    """Activate or deactivate a registration (every launch from it) or one of its deployments."""
    row = deployment if deployment is not None else registration
    row.is_active = active
    row.save(update_fields=["is_active", "datetime_modified"])
    transaction.on_commit(platform_origins_forget)  # an inactive platform may no longer frame the tool
