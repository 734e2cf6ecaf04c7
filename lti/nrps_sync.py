"""NRPS roster sync: the LMS course's members become members of our course, with their roles."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from lti_tool.models import LtiUser

from assignments.models import Membership
from assignments.services import membership_set
from infra import clock
from infra.enqueue import enqueue
from infra.lanes import NUMERIC
from lti.launch import person_sourcedid, user_for_lti
from lti.models import ContextCourse
from lti.platform_client import NRPS_SCOPE, PlatformError, platform_call
from lti.roles import course_role_from_lti

MEMBERSHIP_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
MAX_PAGES = 50  # a platform that pages forever does not keep a worker busy forever


def roster_sync(*, context_course_id: int) -> int:
    """Fetch every page of members, then apply them. Returns the number of active members."""
    link = ContextCourse.objects.select_related("context__deployment__registration", "course").get(id=context_course_id)
    context = link.context
    if not context.memberships_url:
        raise PlatformError("the LMS offers no roster service (NRPS) for this course")
    try:
        members = _members(registration=context.deployment.registration, url=context.memberships_url)
    except PlatformError as exc:
        ContextCourse.objects.filter(id=link.id).update(roster_error=str(exc)[:2000])
        raise
    active = _apply(link=link, members=members)
    ContextCourse.objects.filter(id=link.id).update(roster_synced_at=clock.now(), roster_error="")
    return active


def _members(*, registration: Any, url: str) -> list[dict[str, Any]]:
    members: list[dict[str, Any]] = []
    next_url: str | None = url
    for _ in range(MAX_PAGES):
        if next_url is None:
            break
        reply = platform_call(registration=registration, method="GET", url=next_url, scopes=[NRPS_SCOPE],
                              headers={"Accept": MEMBERSHIP_TYPE})
        body = reply.json()
        if not isinstance(body, dict) or not isinstance(body.get("members"), list):
            raise PlatformError("the roster reply has no member list")
        members.extend({"status": "Active", **m, "roles": m.get("roles") or []}  # status is optional in NRPS
                       for m in body["members"] if isinstance(m, dict) and isinstance(m.get("user_id"), str))
        next_url = reply.links.get("next", {}).get("url")
    return members


@transaction.atomic
def _apply(*, link: ContextCourse, members: list[dict[str, Any]]) -> int:
    context = link.context
    context.update_memberships(members)  # django-lti's LtiUser/LtiMembership rows
    active = 0
    for member in members:
        lti_user = LtiUser.objects.get(registration=context.deployment.registration, sub=member["user_id"])
        user = user_for_lti(lti_user=lti_user, sis_id=person_sourcedid(member.get("lis_person_sourcedid")))
        if member.get("status", "Active") == "Active":
            membership_set(user=user, course=link.course, role=course_role_from_lti(member.get("roles") or []))
            active += 1
        else:  # dropped in the LMS: no longer in our course, their submissions stay
            Membership.objects.filter(user=user, course=link.course).delete()
    return active


def roster_sync_enqueue(context_course_id: int) -> None:
    """The task that reads the LMS course's members (on the default queue, which the numeric lane serves)."""
    enqueue("lti.sync_roster", context_course_id, lane=NUMERIC,
            if_lost="instructors can sync the roster from the scores page later")
