"""A validated launch → our user, course, membership and assignment. Called by the launch view."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser
from django.db import IntegrityError, transaction
from django.utils.text import slugify
from lti_tool.models import LtiContext, LtiLaunch, LtiMembership, LtiResourceLink, LtiUser
from lti_tool.utils import sync_data_from_launch

from assignments.access import LMS_USERNAME_PREFIX, STAFF_ROLES
from assignments.models import Assignment, Course, Membership
from assignments.services import lms_person_set, membership_set
from lti.account_links import roster_account_for_launch
from lti.models import ContextCourse, LinkAssignment
from lti.roles import course_role_from_lti

AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
LIS_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/lis"


class LaunchRefused(Exception):
    """A launch that validated but cannot be served (wrong assignment, a student on an unbound link)."""


@dataclass(frozen=True)
class Arrival:
    user: AbstractUser
    course: Course
    role: Membership.Role
    link: LinkAssignment | None  # None: a deep-linking launch, or an unbound link an instructor must bind
    resource_link: LtiResourceLink | None


@transaction.atomic
def launch_accept(*, lti_launch: LtiLaunch) -> Arrival:
    """Sync django-lti's rows, then map the launch onto a user, a course and (for links) an assignment."""
    sync_data_from_launch(lti_launch)
    # A launch from the LMS course proves the membership now (a roster sync may have ended it before).
    LtiMembership.objects.filter(user=lti_launch.user, context=lti_launch.context).update(is_active=True)
    lis = lti_launch.get_claim(LIS_CLAIM)
    course = course_for_context(context=lti_launch.context)
    role = Membership.Role(course_role_from_lti(lti_launch.roles_claim or []))
    user = user_for_lti(lti_user=lti_launch.user, course=course if role == Membership.Role.STUDENT else None,
                        sis_id=person_sourcedid(lis.get("person_sourcedid") if isinstance(lis, dict) else None))
    if role in STAFF_ROLES and not user.get_username().startswith(LMS_USERNAME_PREFIX) \
            and not Membership.objects.filter(user=user, course=course, role=role).exists():
        # an account of the tool's own (a roster account an instructor linked to this LMS person) is a
        # student's: a teaching role from the LMS is not given to it, whoever linked it
        raise LaunchRefused("Your LMS account is linked to a student account of this tool, which cannot take a "
                            "teaching role from the LMS. Ask the tool's operators to unlink it.")
    membership_set(user=user, course=course, role=role)
    if lti_launch.is_deep_link_launch:
        if role not in STAFF_ROLES:
            raise LaunchRefused("Only instructors can add assignments to the LMS course.")
        return Arrival(user=user, course=course, role=role, link=None, resource_link=None)
    resource_link = lti_launch.resource_link
    link = link_for_launch(resource_link=resource_link, course=course,
                           slug=_text_or_none(lti_launch.get_custom_claim("assignment")),
                           line_item_url=(lti_launch.ags_claim or {}).get("lineitem", ""))
    if link is None and role not in STAFF_ROLES:
        raise LaunchRefused("This LMS link is not set up yet: your instructor has to open it once first.")
    return Arrival(user=user, course=course, role=role, link=link, resource_link=resource_link)


def _text_or_none(value: object) -> str | None:
    """A custom parameter as text: platforms send text, a number is read as its digits, anything else as absent."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return str(value)[:255]


def person_sourcedid(value: object) -> str:
    """The school's id of the person (a launch's LIS claim, an NRPS member's field), when the LMS gave one."""
    return value.strip()[:255] if isinstance(value, str) else ""


def user_for_lti(*, lti_user: LtiUser, sis_id: str = "", course: Course | None = None) -> AbstractUser:
    """One local account per (registration, sub): the same `sub` on another platform is another person.
    The LMS's ids of the person are kept with it (`sis_id`: the LIS person_sourcedid, when given). A person's
    first launch as a student of a `course` that allows it uses the roster account they match
    (`lti.account_links`)."""
    roster = None
    if lti_user.auth_user_id is None and course is not None:
        roster = roster_account_for_launch(course=course, lms_id=lti_user.sub, sis_id=sis_id, email=lti_user.email)
    if lti_user.auth_user_id is not None:
        user: AbstractUser = lti_user.auth_user
    elif roster is not None:
        user = roster
        lti_user.auth_user = user
        lti_user.save(update_fields=["auth_user"])
    else:
        digest = hashlib.sha256(f"{lti_user.registration_id}:{lti_user.sub}".encode()).hexdigest()[:20]
        user, created = get_user_model().objects.get_or_create(username=f"{LMS_USERNAME_PREFIX}{digest}")
        if created:
            user.set_unusable_password()  # LMS accounts log in only through the LMS
            user.save(update_fields=["password"])
        lti_user.auth_user = user
        lti_user.save(update_fields=["auth_user"])
    first, last = lti_user.given_name, lti_user.family_name
    if not (first or last) and lti_user.name:  # only the full name was shared
        first, _, last = lti_user.name.partition(" ")
    names = {"first_name": first[:150], "last_name": last[:150], "email": lti_user.email}
    changed = {k: v for k, v in names.items() if v and getattr(user, k) != v}
    if changed:
        for field, value in changed.items():
            setattr(user, field, value)
        user.save(update_fields=list(changed))
    lms_person_set(user=user, lms_id=lti_user.sub, sis_id=sis_id)
    return user


def course_for_context(*, context: LtiContext) -> Course:
    """The course an LMS context maps to, found only through its `ContextCourse` row (keyed by deployment
    and the context's id; `lti_register --course --context` writes it ahead). The first launch of an
    unmapped context creates a course whose slug ends in random characters, so no course an instructor
    made beforehand can ever be taken for it."""
    LtiContext.objects.select_for_update().filter(pk=context.pk).first()  # one first launch creates the course
    linked = ContextCourse.objects.filter(context=context).select_related("course").first()
    if linked is not None:
        return linked.course
    course = _course_for_new_context(context=context)
    ContextCourse.objects.create(context=context, course=course)
    return course


def _course_for_new_context(*, context: LtiContext) -> Course:
    stem = slugify(context.label or context.title or "lms-course")[:36].strip("-") or "lms-course"
    title = (context.title or context.label or stem)[:200]
    for _ in range(5):
        try:
            with transaction.atomic():
                return Course.objects.create(slug=f"{stem}-{secrets.token_hex(6)}", title=title)
        except IntegrityError:  # 48 random bits met an existing slug: draw again
            continue
    raise LaunchRefused("The tool could not create a course for this LMS course; open the link again.")


def link_for_launch(*, resource_link: LtiResourceLink, course: Course, slug: str | None,
                    line_item_url: str) -> LinkAssignment | None:
    link = LinkAssignment.objects.filter(resource_link=resource_link).select_related("assignment").first()
    if link is None and slug:
        link = link_bind(resource_link=resource_link, assignment=assignment_in_course(course=course, slug=slug))
    if link is not None and line_item_url and link.line_item_url != line_item_url:
        link.line_item_url = line_item_url
        link.save(update_fields=["line_item_url"])
    return link


def assignment_in_course(*, course: Course, slug: str) -> Assignment:
    assignment = Assignment.objects.filter(course=course, slug=slug, archived_at__isnull=True).first()
    if assignment is None:
        raise LaunchRefused(f"The assignment {slug!r} of this LMS link is not in the course {course.title}.")
    return assignment


def link_bind(*, resource_link: LtiResourceLink, assignment: Assignment) -> LinkAssignment:
    """Bind an unbound link; a link already bound keeps its assignment (scores were reported for it)."""
    link, _ = LinkAssignment.objects.get_or_create(resource_link=resource_link, defaults={"assignment": assignment})
    return link
