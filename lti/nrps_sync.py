"""NRPS roster sync: the LMS course's members become members of our course, with their roles.

A complete listing (every `next` page followed, at most MAX_PAGES) is the whole roster: LMS members of
the course it no longer lists, or lists as not active, leave our course (their work stays). Only people
who came from this LMS course are removed; staff and students added by hand (no membership of the LMS
course) are never touched, nor those another LMS course mapped to the same course still lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from lti_tool.models import LtiMembership, LtiUser

from assignments.models import Membership
from assignments.services import membership_set
from infra import clock
from infra.enqueue import enqueue
from infra.lanes import LMS
from lti.launch import person_sourcedid, user_for_lti
from lti.models import ContextCourse
from lti.platform_client import NRPS_SCOPE, PlatformError, platform_call, reply_json
from lti.roles import course_role_from_lti

MEMBERSHIP_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
MAX_PAGES = 50  # a platform that pages forever does not keep a worker busy forever
WHAT = "the LMS's roster service"


@dataclass(frozen=True)
class Listing:
    members: list[dict[str, Any]]
    complete: bool  # every page was read: whoever is not listed is no longer in the LMS course


def roster_sync(*, context_course_id: int) -> int:
    """Fetch every page of members, then apply them. Returns the number of active members."""
    link = ContextCourse.objects.select_related("context__deployment__registration", "course").get(id=context_course_id)
    context = link.context
    if not context.memberships_url:
        raise PlatformError("the LMS offers no roster service (NRPS) for this course")
    try:
        listing = _members(registration=context.deployment.registration, url=context.memberships_url)
    except PlatformError as exc:
        ContextCourse.objects.filter(id=link.id).update(roster_error=str(exc)[:2000])
        raise
    active = _apply(link=link, listing=listing)
    note = "" if listing.complete else f"the LMS listed more than {MAX_PAGES} pages: nobody was removed"
    ContextCourse.objects.filter(id=link.id).update(roster_synced_at=clock.now(), roster_error=note)
    return active


def _members(*, registration: Any, url: str) -> Listing:
    members: list[dict[str, Any]] = []
    next_url: str | None = url
    for _ in range(MAX_PAGES):
        reply = platform_call(registration=registration, method="GET", url=next_url or url, scopes=[NRPS_SCOPE],
                              what=WHAT, headers={"Accept": MEMBERSHIP_TYPE})
        body = reply_json(reply, what=WHAT)
        if not isinstance(body, dict) or not isinstance(body.get("members"), list):
            raise PlatformError(f"{WHAT}: its answer has no member list")
        members.extend(_member(m) for m in body["members"] if _readable(m))
        following = reply.links.get("next", {}).get("url")
        next_url = following if isinstance(following, str) and following else None
        if next_url is None:
            return Listing(members=members, complete=True)
    return Listing(members=members, complete=False)


def _readable(member: Any) -> bool:
    return (isinstance(member, dict) and isinstance(member.get("user_id"), str) and 0 < len(member["user_id"]) <= 255
            and isinstance(member.get("roles", []), list) and all(isinstance(r, str) for r in member.get("roles", [])))


def _member(member: dict[str, Any]) -> dict[str, Any]:
    """Status is optional in NRPS (Active); the text fields django-lti stores are kept only when they fit."""
    limits = {"given_name": 500, "family_name": 500, "name": 500, "email": 254, "picture": 200}
    kept = {k: v for k, v in member.items() if k not in limits or (isinstance(v, str) and len(v) <= limits[k]
                                                                     and "\x00" not in v)}
    status = member.get("status")
    return {**kept, "status": status if isinstance(status, str) else "Active", "roles": member.get("roles") or []}


@transaction.atomic
def _apply(*, link: ContextCourse, listing: Listing) -> int:
    context = link.context
    registration = context.deployment.registration
    context.update_memberships(listing.members)  # django-lti's LtiUser/LtiMembership rows
    active = 0
    for member in listing.members:
        lti_user = LtiUser.objects.get(registration=registration, sub=member["user_id"])
        role = course_role_from_lti(member["roles"])
        user = user_for_lti(lti_user=lti_user, course=link.course if role == Membership.Role.STUDENT else None,
                            sis_id=person_sourcedid(member.get("lis_person_sourcedid")))
        if member["status"] == "Active":
            membership_set(user=user, course=link.course, role=role)
            active += 1
        else:  # dropped in the LMS: no longer in our course, their submissions stay
            _leave(user_id=user.pk, link=link)
    if listing.complete:
        listed = {member["user_id"] for member in listing.members}
        rows = LtiMembership.objects.filter(context=context, is_active=True).values_list("id", "user__sub",
                                                                                        "user__auth_user_id")
        for row_id, sub, user_id in list(rows):
            if sub in listed:
                continue
            LtiMembership.objects.filter(id=row_id).update(is_active=False)
            if user_id is not None:
                _leave(user_id=user_id, link=link)
    return active


def _leave(*, user_id: int, link: ContextCourse) -> None:
    """The user leaves our course, unless another LMS course mapped to it still has them."""
    elsewhere = LtiMembership.objects.filter(user__auth_user_id=user_id, is_active=True,
                                             context__course_link__course=link.course).exclude(context=link.context)
    if not elsewhere.exists():
        Membership.objects.filter(user_id=user_id, course=link.course).delete()


def roster_sync_enqueue(context_course_id: int) -> None:
    """The task that reads the LMS course's members, on the LMS lane."""
    enqueue("lti.sync_roster", context_course_id, lane=LMS,
            if_lost="instructors can sync the roster from the scores page later")
